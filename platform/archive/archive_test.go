package archive_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"svc.dev/svc/platform/archive"
)

func build(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := archive.NewWriter(&buf, time.Unix(1_700_000_000, 0))
	for _, name := range []string{"account.json", "live/plans/pln_1.json", "live/vault/content/a.eml"} {
		if err := w.AddBytes(name, []byte(files[name])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	files := map[string]string{"account.json": `{"id":"usr_1"}`, "live/plans/pln_1.json": `{}`, "live/vault/content/a.eml": "Subject: hi\r\n\r\nbody"}
	data := build(t, files)
	idx, err := archive.Verify(bytes.NewReader(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(files["account.json"]))
	if idx.Format != archive.Format || len(idx.Files) != 3 || idx.Files[0].Path != "account.json" ||
		idx.Files[0].SHA256 != hex.EncodeToString(sum[:]) || idx.Files[0].Size != int64(len(files["account.json"])) {
		t.Fatalf("index %+v", idx)
	}
}

// tamper rewrites an archive, changing the content of one file.
func tamper(t *testing.T, data []byte, name, content string) []byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var out bytes.Buffer
	gw := gzip.NewWriter(&out)
	tw := tar.NewWriter(gw)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		body, _ := io.ReadAll(tr)
		if h.Name == name {
			body = []byte(content)
			h.Size = int64(len(body))
		}
		tw.WriteHeader(h)
		tw.Write(body)
	}
	tw.Close()
	gw.Close()
	return out.Bytes()
}

func TestVerifyCatchesChanges(t *testing.T) {
	files := map[string]string{"account.json": `{"id":"usr_1"}`, "live/plans/pln_1.json": `{}`, "live/vault/content/a.eml": "body"}
	data := build(t, files)
	for name, content := range map[string]string{
		"live/vault/content/a.eml": "bodY",
		"account.json":             `{"id":"usr_2"}`,
		archive.IndexName:          `{"format":"x","files":[]}`,
	} {
		if _, err := archive.Verify(bytes.NewReader(tamper(t, data, name, content)), nil); !errors.Is(err, archive.ErrInvalid) {
			t.Errorf("changing %s: err %v", name, err)
		}
	}
	if _, err := archive.Verify(bytes.NewReader(data[:len(data)/2]), nil); err == nil {
		t.Error("a truncated archive verified")
	}
}

func TestAddRefusesBadNamesAndSizes(t *testing.T) {
	w := archive.NewWriter(io.Discard, time.Now())
	for _, name := range []string{"../x", "/etc/passwd", archive.IndexName} {
		if err := w.AddBytes(name, nil); err == nil {
			t.Errorf("%q accepted", name)
		}
	}
	if err := w.AddBytes("a", nil); err != nil {
		t.Fatal(err)
	}
	if err := w.AddBytes("a", nil); err == nil {
		t.Error("duplicate accepted")
	}
	if err := w.Add("b", 10, strings.NewReader("short")); err == nil {
		t.Error("short file accepted")
	}
	if got := archive.CleanName("../a/b\x00c"); got != ".._a_b_c" {
		t.Errorf("CleanName = %q", got)
	}
}
