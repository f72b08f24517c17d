package gdrive_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"

	"svc.dev/svc/internal/vendorfake"
	fake "svc.dev/svc/internal/vendorfake/drive"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/gdrive"
	"svc.dev/svc/providers/providertest"
)

func content(n int, seed uint64) ([]byte, string) {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:])
}

func fetchAll(t *testing.T, p providers.Provider, o providers.Object) []byte {
	t.Helper()
	c, err := p.Fetch(context.Background(), providers.FetchRequest{SourceRef: "root", ObjectID: o.ID, ExpectedVersion: o.Version})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Body.Close()
	b, err := io.ReadAll(c.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWriteResumable: content over the chunk size goes through a resumable
// upload session in 256 KiB-multiple chunks (one chunk refused with a 503
// and sent again), into folders the write creates; smaller content goes in
// one multipart request; what was written reads back the same.
func TestWriteResumable(t *testing.T) {
	s := fake.New(t, fake.Options{Files: 3})
	p := openWith(t, s, func(cfg providers.Config) { cfg["upload_chunk_bytes"] = "262144" })
	w := p.(providers.Writer)
	ctx := context.Background()
	big, bigSum := content(5*fake.ChunkGranularity+1234, 1)
	s.Inject(func(r *http.Request) bool { return r.URL.Query().Get("upload_id") != "" }, vendorfake.Fault{Status: 503})
	o, err := w.Write(ctx, providers.WriteRequest{SourceRef: "root", Path: "Archive/2024/big.bin", MIMEType: "application/octet-stream",
		SizeBytes: int64(len(big)), SHA256: bigSum, Mode: providers.WriteCopy}, bytes.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	if o.Path != "Archive/2024/big.bin" || o.SHA256 != bigSum || o.SizeBytes != int64(len(big)) {
		t.Fatalf("written object %+v", o)
	}
	st := s.Uploads()
	// Six chunks: five of 256 KiB and the rest.
	if st.Resumable != 1 || st.Chunks != 6 || st.Multipart != 0 || st.Open != 0 {
		t.Fatalf("uploads %+v, want one resumable session of 6 chunks", st)
	}
	refused := 0
	for _, r := range s.Log() {
		if r.Status == 503 && strings.HasPrefix(r.Path, "/upload/") {
			refused++
		}
	}
	if refused != 1 {
		t.Fatalf("%d chunks refused with 503, want the one injected (and sent again)", refused)
	}
	if !bytes.Equal(fetchAll(t, p, o), big) {
		t.Fatal("the written content reads back different")
	}

	small, smallSum := content(1000, 2)
	o2, err := w.Write(ctx, providers.WriteRequest{SourceRef: "root", Path: "Archive/2024/small.txt", MIMEType: "text/plain",
		SizeBytes: 1000, SHA256: smallSum, Mode: providers.WriteCopy}, bytes.NewReader(small))
	if err != nil {
		t.Fatal(err)
	}
	if st := s.Uploads(); st.Multipart != 1 || st.Resumable != 1 {
		t.Fatalf("uploads %+v, want the small file in one multipart request", st)
	}
	if o2.ParentID != o.ParentID {
		t.Errorf("the second write made another Archive/2024 (%s, %s)", o2.ParentID, o.ParentID)
	}
	objs, _ := providertest.ListAll(ctx, t, p, "root", 0)
	var paths []string
	for _, x := range objs {
		paths = append(paths, x.Path)
	}
	if !slices.Contains(paths, "Archive/2024/big.bin") || !slices.Contains(paths, "Archive/2024/small.txt") {
		t.Errorf("listing %v", paths)
	}
}

// TestWriteConflictsAndChecks: an existing name without Overwrite is
// ErrAlreadyExists and with it a new revision of the same file; content
// not matching its SHA-256 sends nothing; content Drive stores differently
// is ErrInvalidData and the file is deleted; a restore to a trashed file's
// id takes it out of the trash.
func TestWriteConflictsAndChecks(t *testing.T) {
	s := fake.New(t, fake.Options{Files: 4, Seed: 3})
	p := open(t, s)
	w := p.(providers.Writer)
	ctx := context.Background()
	data, sum := content(3000, 3)
	req := providers.WriteRequest{SourceRef: "root", Path: "notes/a.bin", SizeBytes: 3000, SHA256: sum, Mode: providers.WriteCopy}
	o, err := w.Write(ctx, req, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(ctx, req, bytes.NewReader(data)); !errors.Is(err, providers.ErrAlreadyExists) {
		t.Fatalf("a second write without Overwrite: %v, want ErrAlreadyExists", err)
	}
	data2, sum2 := content(2000, 4)
	over := providers.WriteRequest{SourceRef: "root", Path: "notes/a.bin", SizeBytes: 2000, SHA256: sum2, Mode: providers.WriteCopy, Overwrite: true}
	o2, err := w.Write(ctx, over, bytes.NewReader(data2))
	if err != nil {
		t.Fatal(err)
	}
	if o2.ID != o.ID || o2.Version == o.Version || !bytes.Equal(fetchAll(t, p, o2), data2) {
		t.Fatalf("overwrite: %+v after %+v", o2, o)
	}

	before := s.Uploads()
	bad := providers.WriteRequest{SourceRef: "root", Path: "notes/b.bin", SizeBytes: -1, SHA256: sum2, Mode: providers.WriteCopy}
	if _, err := w.Write(ctx, bad, bytes.NewReader(data)); !errors.Is(err, providers.ErrInvalidData) {
		t.Fatalf("content not matching its sha256: %v", err)
	}
	if s.Uploads() != before {
		t.Errorf("a write refused before sending uploaded something: %+v", s.Uploads())
	}

	s.CorruptUploads()
	c := providers.WriteRequest{SourceRef: "root", Path: "notes/c.bin", SizeBytes: 3000, SHA256: sum, Mode: providers.WriteCopy}
	if _, err := w.Write(ctx, c, bytes.NewReader(data)); !errors.Is(err, providers.ErrInvalidData) {
		t.Fatalf("content stored differently: %v, want ErrInvalidData", err)
	}
	objs, _ := providertest.ListAll(ctx, t, p, "root", 0)
	for _, x := range objs {
		if strings.HasSuffix(x.Path, "c.bin") {
			t.Errorf("a file whose stored content differs was left: %+v", x)
		}
	}

	// A restore to the original place: the object id, a trashed file.
	target := objs[slices.IndexFunc(objs, func(o providers.Object) bool { return o.SHA256 != "" })]
	orig := fetchAll(t, p, target)
	if _, err := p.(providers.Trasher).Trash(ctx, providers.ActionRequest{SourceRef: "root", ObjectID: target.ID, ExpectedVersion: target.Version}); err != nil {
		t.Fatal(err)
	}
	osum := sha256.Sum256(orig)
	r, err := w.Write(ctx, providers.WriteRequest{SourceRef: "root", Path: target.ID, SizeBytes: int64(len(orig)), SHA256: hex.EncodeToString(osum[:]),
		Mode: providers.WriteRestore}, bytes.NewReader(orig))
	if err != nil || r.ID != target.ID || s.Trashed(target.ID) {
		t.Fatalf("restore to the original place: %v, %+v (trashed %v)", err, r, s.Trashed(target.ID))
	}
	if _, err := w.Write(ctx, providers.WriteRequest{SourceRef: "root", Path: target.ID, SizeBytes: 3000, SHA256: sum, Mode: providers.WriteRestore},
		bytes.NewReader(data)); !errors.Is(err, providers.ErrAlreadyExists) {
		t.Errorf("a restore of other content to a file's place: %v, want ErrAlreadyExists", err)
	}
}

// TestWritesPaced: with the default pacing, the requests that create or
// change files (folder creation, uploads, trash) reach Drive at no more
// than WritesPerSecond.
func TestWritesPaced(t *testing.T) {
	s := fake.New(t, fake.Options{Files: 2})
	p := openWith(t, s, defaultPacing)
	ctx := context.Background()
	for i := range 7 {
		data, sum := content(100+i, uint64(i))
		req := providers.WriteRequest{SourceRef: "root", Path: "paced/" + string(rune('a'+i)) + ".bin", SizeBytes: int64(len(data)), SHA256: sum, Mode: providers.WriteCopy}
		if _, err := p.(providers.Writer).Write(ctx, req, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	var at []float64
	log := s.Log()
	for _, r := range log {
		if r.Method == "POST" || r.Method == "PATCH" || r.Method == "DELETE" {
			at = append(at, r.At.Sub(log[0].At).Seconds())
		}
	}
	if len(at) != 8 { // the folder and seven files
		t.Fatalf("%d writes, want 8", len(at))
	}
	rate := float64(len(at)-1) / (at[len(at)-1] - at[0])
	t.Logf("%d writes at %.2f writes/s (pacing %d/s)", len(at), rate, gdrive.WritesPerSecond)
	if rate > gdrive.WritesPerSecond*1.05 {
		t.Errorf("%.2f writes/s, pacing %d/s", rate, gdrive.WritesPerSecond)
	}
}
