package local

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"svc.dev/svc/mail"
	"svc.dev/svc/providers"
)

// Fetch implements providers.Provider. A Maildir message or a file is opened once and its
// version taken from the open file; a message up to providers.MaxInlineBytes is read whole in
// one read, and those bytes are both what its headers are parsed from and the content returned.
// Only the header block is parsed (providers.ReadMailHeader): the body's signals are the
// listing's.
func (p *Provider) Fetch(ctx context.Context, req providers.FetchRequest) (*providers.Content, error) {
	if err := p.fault("fetch"); err != nil {
		return nil, err
	}
	src, err := p.sourceDir(req.SourceRef)
	if err != nil {
		return nil, err
	}
	f, err := p.fetch(src, req, func(size int64) bool { return size <= providers.MaxInlineBytes })
	if err != nil {
		return nil, err
	}
	if f.body == nil {
		f.body = io.NopCloser(bytes.NewReader(f.content))
	}
	return &providers.Content{Object: f.obj, Body: f.body}, nil
}

// FetchBatch implements providers.BatchFetcher: each object is fetched as Fetch fetches it,
// in order, its content read whole when it fits the batch's budget (else it is deferred).
// Requests of one source resolve the source's directory once.
func (p *Provider) FetchBatch(ctx context.Context, reqs []providers.FetchRequest, fn func(int, providers.FetchOutcome)) error {
	if len(reqs) > providers.MaxBatchSize {
		return fmt.Errorf("local: fetch batch of %d, at most %d: %w", len(reqs), providers.MaxBatchSize, providers.ErrInvalidArgument)
	}
	var budget providers.InlineBudget
	type source struct {
		dir string
		err error
	}
	sources := map[string]source{}
	for i, req := range reqs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := p.fault("fetch"); err != nil {
			fn(i, providers.FetchOutcome{Err: err})
			continue
		}
		s, ok := sources[req.SourceRef]
		if !ok {
			s.dir, s.err = p.sourceDir(req.SourceRef)
			sources[req.SourceRef] = s
		}
		if s.err != nil {
			fn(i, providers.FetchOutcome{Err: s.err})
			continue
		}
		f, err := p.fetch(s.dir, req, budget.Take)
		switch {
		case err != nil:
			fn(i, providers.FetchOutcome{Err: err})
		case f.body != nil:
			f.body.Close()
			fn(i, providers.FetchOutcome{Deferred: true})
		default:
			fn(i, providers.FetchOutcome{Object: f.obj, Content: f.content})
		}
	}
	return nil
}

// fetched is an object opened for a fetch: its metadata and either its whole content or, for
// content that was not to be read whole, an open body.
type fetched struct {
	obj     providers.Object
	content []byte
	body    io.ReadCloser
}

// fetch opens an object in a source directory, checks its version, and reads its content
// whole when whole says its size may be (else it leaves body open on it).
func (p *Provider) fetch(src string, req providers.FetchRequest, whole func(size int64) bool) (fetched, error) {
	e, err := p.resolveAs(src, req.ObjectID, false)
	if err != nil {
		return fetched{}, err
	}
	if e.kind == 'x' {
		return p.fetchMbox(req, e, whole)
	}
	f, fi, err := openFetch(e.full)
	if err != nil && e.fi == nil && errors.Is(err, fs.ErrNotExist) {
		// A remembered message file that moved (another client changed its flags).
		if e, err = p.resolve(src, req.ObjectID); err != nil {
			return fetched{}, err
		}
		f, fi, err = openFetch(e.full)
	}
	if err != nil {
		return fetched{}, fmt.Errorf("local: open %q: %w", req.ObjectID, mapErr(err))
	}
	// The version is taken from the open file, so the bytes read are those of the version
	// checked.
	version := fileVersion(fi)
	if req.ExpectedVersion != "" && req.ExpectedVersion != version {
		f.Close()
		return fetched{}, &providers.VersionMismatchError{ObjectID: req.ObjectID, Expected: req.ExpectedVersion, Actual: version}
	}
	size := fi.Size()
	if whole(size) {
		content, err := readWhole(f, size)
		f.Close()
		if err != nil {
			return fetched{}, fmt.Errorf("local: read %q: %w", req.ObjectID, err)
		}
		var o providers.Object
		if e.kind == 'm' {
			h, facts := providers.ReadMailHeader(content)
			o = maildirObjectOf(req.ObjectID, path.Dir(req.ObjectID), e.msg, fi, h, facts)
		} else {
			o = fileObject(req.ObjectID, fi)
		}
		return fetched{obj: o, content: content}, nil
	}
	o := fileObject(req.ObjectID, fi)
	if e.kind == 'm' {
		// A large message: its header block, at most what the mail reader reads, then the
		// content streamed from the same open file.
		head := make([]byte, min(size, int64(mail.MaxHeaderBytes+mail.MaxBodyScan)))
		n, err := f.ReadAt(head, 0)
		if err != nil && !errors.Is(err, io.EOF) {
			f.Close()
			return fetched{}, fmt.Errorf("local: read %q: %w", req.ObjectID, mapErr(err))
		}
		h, facts := providers.ReadMailHeader(head[:n])
		o = maildirObjectOf(req.ObjectID, path.Dir(req.ObjectID), e.msg, fi, h, facts)
	}
	return fetched{obj: o, body: &sectionCloser{io.NewSectionReader(f, 0, size), f}}, nil
}

// fetchFile is a file open for a fetch.
type fetchFile interface {
	io.ReaderAt
	io.Closer
}

// readWhole reads a file of the given size in one read. A file that is shorter by then changed
// after its version was checked: that is a transient failure (fetched again, it shows its new
// version).
func readWhole(f io.ReaderAt, size int64) ([]byte, error) {
	b := make([]byte, size)
	n, err := f.ReadAt(b, 0)
	if int64(n) == size {
		return b, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("the file changed while it was read: %w", providers.ErrTransient)
	}
	return nil, mapErr(err)
}

// fetchMbox fetches a message of an mbox: its content is read with the mbox (its version is
// the content's hash), once, and its headers parsed from it.
func (p *Provider) fetchMbox(req providers.FetchRequest, e entry, whole func(size int64) bool) (fetched, error) {
	f, err := os.Open(e.full)
	if err != nil {
		return fetched{}, fmt.Errorf("local: open %q: %w", req.ObjectID, mapErr(err))
	}
	defer f.Close()
	m, ok, err := newMboxReader(f, e.offset).next()
	if err != nil {
		return fetched{}, fmt.Errorf("local: read %q: %w", req.ObjectID, mapErr(err))
	}
	if !ok || m.offset != e.offset {
		return fetched{}, fmt.Errorf("local: object %q: %w", req.ObjectID, providers.ErrNotFound)
	}
	h, facts := providers.ReadMailHeader(m.content)
	o := mboxObjectOf(req.ObjectID[:strings.LastIndexByte(req.ObjectID, '#')], m, h, facts)
	if err := checkVersion(req.ObjectID, req.ExpectedVersion, o); err != nil {
		return fetched{}, err
	}
	if !whole(o.SizeBytes) {
		// Read already; the caller that did not want it whole gets it as a stream.
		return fetched{obj: o, body: io.NopCloser(bytes.NewReader(m.content))}, nil
	}
	return fetched{obj: o, content: m.content}, nil
}

type sectionCloser struct {
	*io.SectionReader
	f io.Closer
}

func (s *sectionCloser) Close() error { return s.f.Close() }

// mapErr maps a filesystem error onto the providers' errors. Its text drops the host paths
// that os errors carry: errors reach executions, receipts and API responses, which must not
// reveal where on the host a user's folder is.
func mapErr(err error) error {
	err = hostFree(err)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%v: %w", err, providers.ErrNotFound)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%v: %w", err, providers.ErrPermission)
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("%v: %w", err, providers.ErrAlreadyExists)
	}
	return err
}

// hostFreeError is an os error without its paths; it unwraps to the original.
type hostFreeError struct {
	msg string
	err error
}

func (e *hostFreeError) Error() string { return e.msg }
func (e *hostFreeError) Unwrap() error { return e.err }

func hostFree(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return &hostFreeError{msg: pe.Op + ": " + pe.Err.Error(), err: err}
	case errors.As(err, &le):
		return &hostFreeError{msg: le.Op + ": " + le.Err.Error(), err: err}
	}
	return err
}

// Quota implements providers.Quotaer with the filesystem's figures.
func (p *Provider) Quota(_ context.Context, sourceRef string) (providers.Quota, error) {
	src, err := p.sourceDir(sourceRef)
	if err != nil {
		return providers.Quota{}, err
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(src, &st); err != nil {
		return providers.Quota{}, fmt.Errorf("local: statfs: %w", err)
	}
	bs := int64(st.Bsize)
	q := providers.Quota{
		UsedBytes:  (int64(st.Blocks) - int64(st.Bfree)) * bs,
		LimitBytes: int64(st.Blocks) * bs,
		ObservedAt: time.Now().UTC(),
	}
	_ = filepath.WalkDir(filepath.Join(p.homeTrash(), "files"), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				q.TrashBytes += fi.Size()
			}
		}
		return nil
	})
	return q, nil
}

// hashHex returns the lowercase hex SHA-256 of b.
func hashHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
