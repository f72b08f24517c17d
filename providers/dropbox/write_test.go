package dropbox_test

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
	"sync/atomic"
	"testing"

	fake "svc.dev/svc/internal/vendorfake/dropbox"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/dropbox"
)

const chunk = dropbox.ChunkUnit // the smallest upload_chunk_bytes, so tests stay small

// sessionConfig is the fake's configuration with chunks of 4 MiB.
func sessionConfig(s *fake.Server) providers.Config {
	c := config(s)
	c["upload_chunk_bytes"] = "4194304"
	return c
}

func randomContent(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func write(t *testing.T, p *dropbox.Provider, at string, content []byte, overwrite bool) (providers.Object, error) {
	t.Helper()
	sum := sha256.Sum256(content)
	return p.Write(context.Background(), providers.WriteRequest{Path: at, SizeBytes: int64(len(content)), SHA256: hex.EncodeToString(sum[:]),
		Mode: providers.WriteCopy, Overwrite: overwrite}, bytes.NewReader(content))
}

// stored reads a file back through the provider.
func stored(t *testing.T, p *dropbox.Provider, id string) []byte {
	t.Helper()
	c, err := p.Fetch(context.Background(), providers.FetchRequest{ObjectID: id})
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

// TestUploadSession: content over upload_chunk_bytes goes through an
// upload session in chunks of it (an empty start, every chunk by
// append_v2, an empty finish); content up to it in one files/upload; a
// session's commit honours add and overwrite.
func TestUploadSession(t *testing.T) {
	s := fake.New()
	defer s.Close()
	p, err := dropbox.Open(sessionConfig(s), nil)
	if err != nil {
		t.Fatal(err)
	}
	content := randomContent(3*chunk+12345, 1)
	o, err := write(t, p, "Archive/big.bin", content, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{0, chunk, chunk, chunk, 12345, 0}; !slices.Equal(s.SessionChunks(), want) {
		t.Errorf("session calls' data: %v, want %v", s.SessionChunks(), want)
	}
	if o.ID != "/archive/big.bin" || o.SizeBytes != int64(len(content)) || !bytes.Equal(stored(t, p, o.ID), content) {
		t.Errorf("stored: %+v", o)
	}
	// Up to one chunk: one files/upload, no session.
	for _, n := range []int{0, 100, chunk} {
		before := len(s.SessionChunks())
		small := randomContent(n, uint64(n))
		o, err := write(t, p, "Archive/small.bin", small, true)
		if err != nil || len(s.SessionChunks()) != before || !bytes.Equal(stored(t, p, o.ID), small) {
			t.Errorf("%d bytes: %v, session calls %v", n, err, s.SessionChunks()[before:])
		}
	}
	// The commit: add onto a file is a conflict, overwrite replaces it.
	other := randomContent(2*chunk+1, 2)
	if _, err := write(t, p, "Archive/big.bin", other, false); !errors.Is(err, providers.ErrAlreadyExists) {
		t.Errorf("session onto a file without overwrite: %v, want ErrAlreadyExists", err)
	}
	if o, err := write(t, p, "Archive/big.bin", other, true); err != nil || !bytes.Equal(stored(t, p, o.ID), other) {
		t.Errorf("session overwrite: %v", err)
	}
	// Content that is not what the request says uploads nothing.
	before := len(s.SessionChunks())
	_, err = p.Write(context.Background(), providers.WriteRequest{Path: "Archive/bad.bin", SizeBytes: int64(len(other)),
		SHA256: strings.Repeat("0", 64)}, bytes.NewReader(other))
	if !errors.Is(err, providers.ErrInvalidData) || len(s.SessionChunks()) != before || s.Exists("/Archive/bad.bin") {
		t.Errorf("wrong sha256: %v", err)
	}
}

// forgetting is a transport that drops the fake's upload sessions before
// the nth append reaches it, as Dropbox does with a session over 7 days.
type forgetting struct {
	s       *fake.Server
	n       int32
	appends atomic.Int32
}

func (f *forgetting) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/append_v2") && f.appends.Add(1) == f.n {
		f.s.ForgetSessions()
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestUploadSessionResumes: an append whose answer is lost (stored, then
// a 503) is sent again at the same offset, and the upload goes on from
// the correct_offset Dropbox answers (incorrect_offset), or, for the
// closing append, from the end (closed); an append refused with a 503
// before it was stored is sent again; a session Dropbox no longer knows
// (not_found) is started again. Each time the file stored is the
// content, sent once.
func TestUploadSessionResumes(t *testing.T) {
	content := randomContent(3*chunk+777, 3)
	for _, tc := range []struct {
		name   string
		fault  func(s *fake.Server)
		forget int32 // drop the sessions before this append (0: never)
		chunks []int
		sends  int64 // requests in all: a resend or a restart shows here
	}{
		{name: "lost answer mid-session", fault: func(s *fake.Server) { s.LoseAppendAnswers(1, 1) },
			chunks: []int{0, chunk, chunk, chunk, 777, 0}, sends: 7},
		{name: "lost answer of the closing append", fault: func(s *fake.Server) { s.LoseAppendAnswers(3, 1) },
			chunks: []int{0, chunk, chunk, chunk, 777, 0}, sends: 7},
		{name: "503 before the append", fault: func(s *fake.Server) {
			s.Inject(fake.Fault{PathPrefix: "/2/files/upload_session/append_v2", Status: http.StatusServiceUnavailable, Times: 1, After: 2})
		}, chunks: []int{0, chunk, chunk, chunk, 777, 0}, sends: 7},
		{name: "session gone", forget: 3,
			chunks: []int{0, chunk, chunk, 0, chunk, chunk, chunk, 777, 0}, sends: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fake.New()
			defer s.Close()
			var base http.RoundTripper
			if tc.forget > 0 {
				base = &forgetting{s: s, n: tc.forget}
			}
			p, err := dropbox.Open(sessionConfig(s), base)
			if err != nil {
				t.Fatal(err)
			}
			if tc.fault != nil {
				tc.fault(s)
			}
			o, err := write(t, p, "big.bin", content, false)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.SessionChunks(), tc.chunks) {
				t.Errorf("session calls' data: %v, want %v", s.SessionChunks(), tc.chunks)
			}
			if n := s.Requests(); n != tc.sends {
				t.Errorf("%d requests, want %d", n, tc.sends)
			}
			if !bytes.Equal(stored(t, p, o.ID), content) {
				t.Error("the stored file is not the content")
			}
		})
	}
}

func TestUploadChunkConfig(t *testing.T) {
	s := fake.New()
	defer s.Close()
	for _, v := range []string{"0", "1048576", "6291456", "159383552", "x"} {
		c := config(s)
		c["upload_chunk_bytes"] = v
		if _, err := dropbox.Open(c, nil); !errors.Is(err, providers.ErrInvalidArgument) {
			t.Errorf("upload_chunk_bytes=%s: %v, want ErrInvalidArgument", v, err)
		}
	}
}
