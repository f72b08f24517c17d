package onedrive_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"testing"

	fake "svc.dev/svc/internal/vendorfake/graph"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/onedrive"
)

func randomContent(n int, seed uint64) ([]byte, string) {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:])
}

// TestUploadSession: content over the fragment size goes through an upload
// session in 320 KiB fragments PUT without the token; a fragment refused
// with a 503 is resumed from the session's status, not sent blindly; a
// second write without Overwrite is refused and with it replaces the file;
// what was written reads back the same.
func TestUploadSession(t *testing.T) {
	s := fake.Seeded(fake.Seed{Seed: 4, Files: 2, Messages: 1})
	defer s.Close()
	cfg := config(s)
	cfg["upload_fragment_bytes"] = "327680"
	p, err := onedrive.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	w, _ := providers.AsWriter(p)
	data, sum := randomContent(4*fake.FragmentGranularity+999, 1)
	s.Inject(fake.Fault{Method: http.MethodPut, PathPrefix: "/_upload/", Status: http.StatusServiceUnavailable, Times: 1, After: 2})
	req := providers.WriteRequest{Path: "Backups/large.bin", SizeBytes: int64(len(data)), SHA256: sum, Mode: providers.WriteCopy}
	o, err := w.Write(ctx, req, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	st := s.Sessions()
	// Five fragments, the third refused once and sent again after a status query.
	if st.Created != 1 || st.Completed != 1 || st.Fragments != 5 || st.Queries != 1 || st.Open != 0 {
		t.Fatalf("sessions %+v, want one session of 5 fragments and one status query", st)
	}
	if o.Path != "Backups/large.bin" || o.SizeBytes != int64(len(data)) || o.SHA256 != sum {
		t.Fatalf("written object %+v", o)
	}
	c, err := p.Fetch(ctx, providers.FetchRequest{ObjectID: o.ID, ExpectedVersion: o.Version})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c.Body)
	c.Body.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	if _, err := w.Write(ctx, req, bytes.NewReader(data)); !errors.Is(err, providers.ErrAlreadyExists) {
		t.Fatalf("a second write without Overwrite: %v, want ErrAlreadyExists", err)
	}
	if st := s.Sessions(); st.Open != 0 {
		t.Errorf("a refused write left %d sessions open", st.Open)
	}
	data2, sum2 := randomContent(2*fake.FragmentGranularity+1, 2)
	o2, err := w.Write(ctx, providers.WriteRequest{Path: "Backups/large.bin", SizeBytes: int64(len(data2)), SHA256: sum2, Mode: providers.WriteCopy, Overwrite: true}, bytes.NewReader(data2))
	if err != nil || o2.ID != o.ID || o2.Version == o.Version || o2.SizeBytes != int64(len(data2)) {
		t.Fatalf("overwrite: %+v, %v", o2, err)
	}
	small, ssum := randomContent(1000, 3)
	before := s.Sessions()
	if _, err := w.Write(ctx, providers.WriteRequest{Path: "Backups/small.bin", SizeBytes: 1000, SHA256: ssum, Mode: providers.WriteCopy}, bytes.NewReader(small)); err != nil {
		t.Fatal(err)
	}
	if s.Sessions() != before {
		t.Errorf("a small file went through an upload session")
	}
	if _, err := onedrive.New(ctx, providers.Config{"upload_fragment_bytes": "1000"}); !errors.Is(err, providers.ErrInvalidArgument) {
		t.Errorf("a fragment size off Graph's 320 KiB granularity: %v", err)
	}
}
