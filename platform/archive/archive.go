// Package archive writes and checks svc's export archives: a gzip-compressed tar whose last
// file, index.json, lists every other file with its size and SHA-256. Files are streamed
// through the writer one at a time, so memory does not depend on the archive's size.
package archive

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
)

// IndexName is the name of the index, the archive's last file.
const IndexName = "index.json"

// Format names the archive layout in its index.
const Format = "svc-account-export/v1"

// ErrInvalid is returned when an archive does not match its index.
var ErrInvalid = errors.New("archive does not match its index")

// Entry is one file of the index.
type Entry struct {
	Path   string `json:"path"`
	Size   int64  `json:"size_bytes"`
	SHA256 string `json:"sha256"`
}

// Index lists an archive's files.
type Index struct {
	Format    string    `json:"format"`
	CreatedAt time.Time `json:"created_at"`
	Files     []Entry   `json:"files"`
}

// Writer writes an archive. Add files, then Close to write the index.
type Writer struct {
	gz    *gzip.Writer
	tw    *tar.Writer
	at    time.Time
	index Index
	names map[string]bool
}

// NewWriter returns a writer of an archive to w whose files carry the time at.
func NewWriter(w io.Writer, at time.Time) *Writer {
	gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // vault content is often compressed already
	at = at.UTC().Truncate(time.Second)
	return &Writer{gz: gz, tw: tar.NewWriter(gz), at: at, index: Index{Format: Format, CreatedAt: at}, names: map[string]bool{}}
}

// CleanName makes s safe as one path segment of an archive name: no separators, no dot
// names, no control characters, at most 120 bytes.
func CleanName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '/' || r == '\\' || r < 0x20 || r == 0x7f:
			b.WriteRune('_')
		default:
			b.WriteRune(r)
		}
	}
	out := strings.Trim(b.String(), " ")
	if out == "" || out == "." || out == ".." {
		out = "_"
	}
	if len(out) > 120 {
		cut := 120
		for cut > 0 && !isRuneStart(out[cut]) {
			cut--
		}
		out = out[:cut]
	}
	return out
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// Add writes a file of size bytes read from r; r must yield exactly size bytes.
func (w *Writer) Add(name string, size int64, r io.Reader) error {
	name = path.Clean(name)
	if name == IndexName || strings.HasPrefix(name, "/") || strings.HasPrefix(name, "../") || name == ".." {
		return fmt.Errorf("archive: invalid name %q", name)
	}
	if w.names[name] {
		return fmt.Errorf("archive: duplicate name %q", name)
	}
	w.names[name] = true
	if err := w.tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, ModTime: w.at, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return fmt.Errorf("archive %s: %w", name, err)
	}
	h := sha256.New()
	n, err := io.Copy(w.tw, io.TeeReader(io.LimitReader(r, size), h))
	if err != nil {
		return fmt.Errorf("archive %s: %w", name, err)
	}
	if n != size {
		return fmt.Errorf("archive %s: %d bytes, want %d", name, n, size)
	}
	w.index.Files = append(w.index.Files, Entry{Path: name, Size: size, SHA256: hex.EncodeToString(h.Sum(nil))})
	return nil
}

// AddBytes writes a file held in memory.
func (w *Writer) AddBytes(name string, data []byte) error {
	return w.Add(name, int64(len(data)), strings.NewReader(string(data)))
}

// Close writes the index and ends the archive; it does not close the underlying writer.
func (w *Writer) Close() error {
	data, err := json.MarshalIndent(w.index, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if err := w.tw.WriteHeader(&tar.Header{Name: IndexName, Mode: 0o600, Size: int64(len(data)), ModTime: w.at, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := w.tw.Write(data); err != nil {
		return err
	}
	if err := w.tw.Close(); err != nil {
		return err
	}
	return w.gz.Close()
}

// Files is how many files were added (the index not counted).
func (w *Writer) Files() int { return len(w.index.Files) }

// Verify reads a whole archive and checks it against its index: every file present once with
// the size and SHA-256 the index gives, nothing else, and the index last. It returns the index.
// onFile, if not nil, is called after each file with the bytes read so far.
func Verify(r io.Reader, onFile func(name string)) (*Index, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("%w: not gzip: %v", ErrInvalid, err)
	}
	tr := tar.NewReader(gz)
	seen := map[string]Entry{}
	var order []string
	var idx *Index
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		if idx != nil {
			return nil, fmt.Errorf("%w: %s follows the index", ErrInvalid, hdr.Name)
		}
		if hdr.Name == IndexName {
			idx = &Index{}
			if err := json.NewDecoder(tr).Decode(idx); err != nil {
				return nil, fmt.Errorf("%w: index: %v", ErrInvalid, err)
			}
			continue
		}
		if _, dup := seen[hdr.Name]; dup {
			return nil, fmt.Errorf("%w: %s appears twice", ErrInvalid, hdr.Name)
		}
		h := sha256.New()
		n, err := io.Copy(h, tr)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, hdr.Name, err)
		}
		seen[hdr.Name] = Entry{Path: hdr.Name, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}
		order = append(order, hdr.Name)
		if onFile != nil {
			onFile(hdr.Name)
		}
	}
	if idx == nil {
		return nil, fmt.Errorf("%w: no %s", ErrInvalid, IndexName)
	}
	if len(idx.Files) != len(seen) {
		return nil, fmt.Errorf("%w: the index lists %d files, the archive holds %d", ErrInvalid, len(idx.Files), len(seen))
	}
	for _, e := range idx.Files {
		got, ok := seen[e.Path]
		if !ok {
			return nil, fmt.Errorf("%w: %s is missing", ErrInvalid, e.Path)
		}
		if got.Size != e.Size || got.SHA256 != e.SHA256 {
			return nil, fmt.Errorf("%w: %s has %d bytes with SHA-256 %s; the index says %d bytes, %s", ErrInvalid, e.Path, got.Size, got.SHA256, e.Size, e.SHA256)
		}
	}
	return idx, nil
}
