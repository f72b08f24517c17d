package local

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/pagetoken"
)

// A listing walks the source in a fixed order: directory entries sorted by
// name, a Maildir's messages by unique name at the position of its cur/,
// an mbox's messages by offset. Each object has a position key (its path
// components, then the unique name or the zero-padded offset); a page token
// holds the key of the last object listed, so a listing resumes after it
// without state, even in another process.

type lister struct {
	ctx     context.Context
	src     string
	size    int
	objs    []providers.Object
	last    []string
	more    bool
	snap    *pagetoken.Snapshot
	hashAll bool // compute the snapshot only (Changes): keep no objects

	// tooLong counts the objects left out because their ids would be longer than the
	// contract's 1,024 bytes (a deep tree of long names); List logs them.
	tooLong        int
	tooLongExample string
}

// emit adds an object (key is its position, in file names as they are); it returns false
// when the page is full. An object whose id is too long for the provider contract is left
// out (see tooLong).
func (l *lister) emit(key []string, o providers.Object) bool {
	if len(o.ID) > maxIDBytes {
		if l.tooLong == 0 {
			l.tooLongExample = o.ID[:64] + "..."
		}
		l.tooLong++
		return true
	}
	if !l.hashAll && len(l.objs) == l.size {
		l.more = true
		return false
	}
	l.snap.Add(o.ID, o.Version)
	if !l.hashAll {
		l.objs = append(l.objs, o)
		l.last = l.last[:0:0]
		for _, k := range key {
			l.last = append(l.last, encodeName(k)) // a page token is JSON: UTF-8 only
		}
	}
	return true
}

func (l *lister) dir(full string, rel []string, after []string) (bool, error) {
	if err := l.ctx.Err(); err != nil {
		return false, err
	}
	entries, err := os.ReadDir(full)
	if err != nil {
		return false, fmt.Errorf("local: read %s: %w", strings.Join(rel, "/"), mapErr(err))
	}
	maildir := isMaildir(full)
	for _, e := range entries {
		name := e.Name()
		if isTrashName(name) || isWriteTemp(name) {
			continue
		}
		var sub []string
		if after != nil {
			switch c := strings.Compare(name, after[0]); {
			case c < 0:
				continue
			case c == 0:
				sub = after[1:]
				if len(sub) == 0 {
					continue // this very object was listed
				}
			}
		}
		key := append(rel[:len(rel):len(rel)], name)
		if maildir && (name == "new" || name == "tmp") {
			continue
		}
		if maildir && name == "cur" {
			if ok, err := l.maildir(full, rel, sub); !ok || err != nil {
				return ok, err
			}
			continue
		}
		switch {
		case e.IsDir():
			if ok, err := l.dir(filepath.Join(full, name), key, sub); !ok || err != nil {
				return ok, err
			}
		case e.Type().IsRegular():
			fp := filepath.Join(full, name)
			if isMbox(fp, name) {
				if ok, err := l.mbox(fp, key, sub); !ok || err != nil {
					return ok, err
				}
				continue
			}
			if sub != nil {
				continue // the key pointed into a file that is no longer an mbox
			}
			fi, err := e.Info()
			if err != nil {
				continue // removed meanwhile
			}
			if !l.emit(key, fileObject(encodePath(key...), fi)) {
				return false, nil
			}
		}
	}
	return true, nil
}

func (l *lister) maildir(dir string, rel []string, after []string) (bool, error) {
	msgs, err := maildirMessages(dir)
	if err != nil {
		return false, fmt.Errorf("local: maildir %s: %w", strings.Join(rel, "/"), mapErr(err))
	}
	container := encodePath(rel...)
	if container == "" {
		container = "."
	}
	for _, m := range msgs {
		if strings.Contains(m.flags, "T") || (len(after) > 0 && m.unique <= after[0]) {
			continue
		}
		fi, err := os.Stat(m.file)
		if err != nil {
			continue
		}
		id := encodePath(append(rel[:len(rel):len(rel)], m.unique)...)
		key := append(rel[:len(rel):len(rel)], "cur", m.unique)
		if l.hashAll {
			// A snapshot needs each message's id and version (its file's), not its parse:
			// Changes (which every execution's start asks, to check the plan's marker) would
			// otherwise read the whole mailbox again.
			l.emit(key, providers.Object{ID: id, Version: fileVersion(fi)})
			continue
		}
		if !l.emit(key, maildirObject(id, container, m, fi)) {
			return false, nil
		}
	}
	return true, nil
}

func offsetKey(off int64) string { return fmt.Sprintf("%020d", off) }

func (l *lister) mbox(file string, key []string, after []string) (bool, error) {
	f, err := os.Open(file)
	if err != nil {
		return true, nil // removed meanwhile
	}
	defer f.Close()
	var start int64
	if len(after) > 0 {
		if start, err = strconv.ParseInt(after[0], 10, 64); err != nil {
			return false, fmt.Errorf("local: page token: %w", providers.ErrInvalidArgument)
		}
	}
	r := newMboxReader(f, start)
	rel := encodePath(key...)
	for {
		m, ok, err := r.next()
		if err != nil {
			return false, fmt.Errorf("local: mbox %s: %w", rel, err)
		}
		if !ok {
			return true, nil
		}
		if len(after) > 0 && m.offset <= start {
			continue
		}
		if l.hashAll { // the id and version only (the content's hash), as for a Maildir
			l.emit(nil, providers.Object{ID: rel + "#" + strconv.FormatInt(m.offset, 10), Version: hashHex(m.content)[:32]})
			continue
		}
		if !l.emit(append(key[:len(key):len(key)], offsetKey(m.offset)), mboxObject(rel, m)) {
			return false, nil
		}
	}
}

// List implements providers.Provider.
func (p *Provider) List(ctx context.Context, req providers.ListRequest) (providers.Page, error) {
	src, err := p.sourceDir(req.SourceRef)
	if err != nil {
		return providers.Page{}, err
	}
	after, snap, err := pagetoken.Decode(req.PageToken)
	if err != nil {
		return providers.Page{}, fmt.Errorf("local: %w", err)
	}
	for i, k := range after {
		if after[i], err = decodeStored(k); err != nil {
			return providers.Page{}, fmt.Errorf("local: page token: %v: %w", err, providers.ErrInvalidArgument)
		}
	}
	l := &lister{ctx: ctx, src: src, size: providers.ClampPageSize(req.PageSize), snap: snap}
	if _, err := l.dir(src, nil, after); err != nil {
		return providers.Page{}, err
	}
	if l.tooLong > 0 {
		slog.Warn("local: objects not listed: their ids would be longer than 1,024 bytes", "source", req.SourceRef,
			"count", l.tooLong, "example", l.tooLongExample)
	}
	page := providers.Page{Objects: l.objs}
	if l.more {
		if page.NextPageToken, err = pagetoken.Encode(l.last, l.snap); err != nil {
			return providers.Page{}, err
		}
		return page, nil
	}
	page.Marker = l.snap.Marker()
	return page, nil
}

// Changes implements providers.Provider: it recognises the current
// snapshot marker and expires any other.
func (p *Provider) Changes(ctx context.Context, req providers.ChangesRequest) (providers.ChangePage, error) {
	src, err := p.sourceDir(req.SourceRef)
	if err != nil {
		return providers.ChangePage{}, err
	}
	if req.Since.Kind != providers.MarkerSnapshotHash {
		return providers.ChangePage{}, fmt.Errorf("local: marker kind %q: %w", req.Since.Kind, providers.ErrMarkerExpired)
	}
	l := &lister{ctx: ctx, src: src, snap: pagetoken.NewSnapshot(), hashAll: true}
	if _, err := l.dir(src, nil, nil); err != nil {
		return providers.ChangePage{}, err
	}
	m := l.snap.Marker()
	if m != req.Since {
		return providers.ChangePage{}, fmt.Errorf("local: source changed since the marker and local folders keep no journal: %w", providers.ErrMarkerExpired)
	}
	return providers.ChangePage{Marker: m}, nil
}

// mboxMessage is one message of an mbox file.
type mboxMessage struct {
	offset        int64 // of its From_ line
	contentOffset int64
	content       []byte
}

// mboxReader splits an mbox into messages: each starts at a "From " line
// at the start of the file or after an empty line, and ends before the
// empty line that precedes the next one.
type mboxReader struct {
	r       *bufio.Reader
	pos     int64
	pending []byte // a From_ line read ahead
	pendOff int64
}

func newMboxReader(f *os.File, start int64) *mboxReader {
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		start = 0
	}
	return &mboxReader{r: bufio.NewReaderSize(f, 64<<10), pos: start}
}

func (m *mboxReader) line() ([]byte, int64, error) {
	if m.pending != nil {
		l, off := m.pending, m.pendOff
		m.pending = nil
		return l, off, nil
	}
	off := m.pos
	l, err := m.r.ReadBytes('\n')
	m.pos += int64(len(l))
	if len(l) > 0 && err == io.EOF {
		err = nil
	}
	return l, off, err
}

func (m *mboxReader) next() (mboxMessage, bool, error) {
	var msg mboxMessage
	// Find the From_ line.
	for {
		l, off, err := m.line()
		if err == io.EOF {
			return msg, false, nil
		}
		if err != nil {
			return msg, false, err
		}
		if bytes.HasPrefix(l, []byte("From ")) {
			msg.offset, msg.contentOffset = off, off+int64(len(l))
			break
		}
	}
	var buf bytes.Buffer
	prevEmpty := false
	for {
		l, off, err := m.line()
		if err == io.EOF {
			break
		}
		if err != nil {
			return msg, false, err
		}
		if prevEmpty && bytes.HasPrefix(l, []byte("From ")) {
			m.pending, m.pendOff = l, off
			break
		}
		buf.Write(l)
		prevEmpty = len(bytes.TrimRight(l, "\r\n")) == 0
	}
	content := buf.Bytes()
	if m.pending != nil || prevEmpty { // drop the separating empty line
		if bytes.HasSuffix(content, []byte("\r\n")) && prevEmpty {
			content = content[:len(content)-2]
		} else if bytes.HasSuffix(content, []byte("\n")) && prevEmpty {
			content = content[:len(content)-1]
		}
	}
	msg.content = content
	return msg, true, nil
}

func mboxObject(fileRel string, m mboxMessage) providers.Object {
	h, facts := headers(bytes.NewReader(m.content))
	return mboxObjectOf(fileRel, m, h, facts)
}

// mboxObjectOf is an mbox message's object from its content and its headers.
func mboxObjectOf(fileRel string, m mboxMessage, h *providers.MessageHeaders, facts map[string]string) providers.Object {
	sum := hashHex(m.content)
	o := providers.Object{
		ID:         fileRel + "#" + strconv.FormatInt(m.offset, 10),
		ParentID:   fileRel,
		Version:    sum[:32],
		Kind:       providers.KindMessage,
		Name:       h.Subject,
		Path:       fileRel,
		SizeBytes:  int64(len(m.content)),
		SHA256:     sum,
		MIMEType:   "message/rfc822",
		Containers: []string{fileRel},
		Message:    h,
		Metadata:   providers.WithFacts(map[string]string{"mbox_content_offset": strconv.FormatInt(m.contentOffset, 10)}, facts),
	}
	if !h.Date.IsZero() {
		o.CreatedAt = h.Date
	}
	return o
}
