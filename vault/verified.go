package vault

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
)

// Reading without serving anything unverified.
//
// A reader from Open (and OpenText) decrypts, authenticates and hashes as it
// goes, and holds back its final segment (up to 1 MiB: all of a small
// content) until the size and SHA-256 of the whole matched. So:
//
//   - a consumer that reads to io.EOF gets an error wrapping ErrInvalidData
//     before the last bytes of content that does not verify;
//   - a consumer that knows the size and stops there (a limit reader, an HTTP
//     body of that Content-Length) never receives all of it either: the last
//     bytes come only after the verification.
//
// The helpers below are the forms the edges need: CopyContent for a download
// (fail before the last byte, then abort the response), Spool for an archive
// that must know an entry is good before it writes the entry's header, and
// ReadText and ReadHead for the search index, which indexes only what verified.

// CopyContent copies a reader from Open (or OpenText) to dst until its end,
// and checks that it was exactly size bytes. dst receives the last byte only
// if the content verified; on any error the caller must treat what dst
// received as incomplete (an HTTP handler aborts the response, so that the
// client never sees a complete 200). It returns the bytes written.
func CopyContent(dst io.Writer, src io.Reader, size int64) (int64, error) {
	n, err := io.Copy(dst, src)
	if err != nil {
		return n, err
	}
	if n != size {
		return n, fmt.Errorf("content ended after %d bytes, want %d: %w", n, size, ErrInvalidData)
	}
	return n, nil
}

// spoolInMemory is the largest content Spool keeps in memory.
const spoolInMemory = 8 << 20

// Spooled is a vault object's content, read to its end and verified: what it
// reads is exactly the object's bytes. Close releases it.
type Spooled struct {
	io.Reader
	Object Object
	f      *os.File
}

// Close releases the spooled copy (removing its temporary file, if any).
func (s *Spooled) Close() error {
	if s.f != nil {
		return s.f.Close()
	}
	return nil
}

// Spool reads a committed or cold object to its end and verifies it before
// anything of it is handed out: content up to 8 MiB is kept in memory, larger
// content in an unnamed temporary file in dir ("": the system's), removed as
// it is created (its name is unlinked at once, so nothing is left after a
// crash; the plaintext is on the disk only while Spooled is open). An error
// wrapping ErrInvalidData means the object failed verification (and is now
// marked corrupt): an export fails that object and goes on with the next.
func (v *Vault) Spool(ctx context.Context, tenant, id, dir string) (*Spooled, error) {
	rc, o, err := v.Open(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if o.SizeBytes <= spoolInMemory {
		buf := bytes.NewBuffer(make([]byte, 0, o.SizeBytes+1))
		if _, err := CopyContent(buf, rc, o.SizeBytes); err != nil {
			return nil, fmt.Errorf("spool vault object %s: %w", id, err)
		}
		return &Spooled{Reader: bytes.NewReader(buf.Bytes()), Object: o}, nil
	}
	f, err := os.CreateTemp(dir, ".svc-spool-*")
	if err != nil {
		return nil, fmt.Errorf("spool vault object %s: %w", id, err)
	}
	_ = os.Remove(f.Name())
	if _, err := CopyContent(f, rc, o.SizeBytes); err != nil {
		f.Close()
		return nil, fmt.Errorf("spool vault object %s: %w", id, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("spool vault object %s: %w", id, err)
	}
	return &Spooled{Reader: f, Object: o, f: f}, nil
}

// ReadText returns up to limit bytes of an object's extracted text, read to
// the end of its stream so that it is verified (size and SHA-256, of the text
// or of the content it is a range of) before it is returned: what the search
// index indexes. An object without text is ErrNotFound.
func (v *Vault) ReadText(ctx context.Context, tenant, id string, limit int) ([]byte, error) {
	rc, err := v.OpenText(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return readVerifiedPrefix(rc, limit)
}

// ReadHead returns up to limit bytes from the start of an object's content
// (a message's header, for the index), read to the content's end so that they
// are verified before they are returned.
func (v *Vault) ReadHead(ctx context.Context, tenant, id string, limit int) ([]byte, Object, error) {
	rc, o, err := v.Open(ctx, tenant, id)
	if err != nil {
		return nil, Object{}, err
	}
	defer rc.Close()
	b, err := readVerifiedPrefix(rc, limit)
	return b, o, err
}

// readVerifiedPrefix keeps the first limit bytes of r and reads the rest to
// its end.
func readVerifiedPrefix(r io.Reader, limit int) ([]byte, error) {
	var head bytes.Buffer
	if _, err := io.Copy(&head, io.LimitReader(r, int64(limit))); err != nil {
		return nil, err
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return nil, err
	}
	return head.Bytes(), nil
}
