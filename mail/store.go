package mail

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MboxReader splits an mbox file into its messages as a stream: each message is read through the
// io.Reader Next returns, so a message of any size costs a buffer, not its size.
//
// It reads the mboxrd and mboxo variants as people have them: a message starts at a "From "
// line that looks like an envelope line (a sender, then a date with a time and a year) and is
// followed by a header field; a "From " line in a body that is not quoted (mboxo writers did not
// quote, and many tools still do not) stays in the body; ">From " lines lose one ">" (mboxrd
// quoting; an mboxo file's quoted lines are unquoted too, which is what its writer meant). A
// file cut in the middle of a message yields that message as far as it goes.
type MboxReader struct {
	br       *bufio.Reader
	off      int64 // bytes consumed
	envelope string
	nextEnv  string // the envelope line of the next message, read at the end of this one
	startOff int64
	cur      *mboxMessage
	pending  bool // a separator line was consumed and starts the next message
	err      error
}

// NewMboxReader returns a reader of the mbox in r.
func NewMboxReader(r io.Reader) *MboxReader {
	return &MboxReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns a reader of the next message's bytes (without its From_ envelope line, with
// ">From " unquoted), or io.EOF after the last. The reader is valid until the next call to
// Next, which skips whatever of the previous message was not read. Text before the first
// envelope line (not an mbox, or garbage) is returned as a message of its own when it has any
// bytes that are not white space.
func (m *MboxReader) Next() (io.Reader, error) {
	if m.err != nil {
		return nil, m.err
	}
	if m.cur != nil {
		if _, err := io.Copy(io.Discard, m.cur); err != nil {
			m.err = err
			return nil, err
		}
	}
	if !m.pending {
		if m.cur != nil { // the last message ended at the end of the file
			m.err = io.EOF
			return nil, io.EOF
		}
		// The start of the file: an envelope line, or a message without one.
		line, err := m.br.Peek(5)
		if len(line) == 0 && err != nil {
			m.err = io.EOF
			if !errors.Is(err, io.EOF) {
				m.err = err
			}
			return nil, m.err
		}
		if bytes.Equal(line, []byte("From ")) {
			l, _ := m.readLine()
			m.envelope = strings.TrimRight(string(l), "\r\n")
		}
	}
	if m.pending {
		m.envelope = m.nextEnv
	}
	m.pending = false
	m.startOff = m.off
	m.cur = &mboxMessage{m: m, lineStart: true}
	return m.cur, nil
}

// Envelope returns the From_ line of the current message ("" when it had none).
func (m *MboxReader) Envelope() string { return m.envelope }

// Offset returns the byte offset in the file of the current message's first header byte.
func (m *MboxReader) Offset() int64 { return m.startOff }

func (m *MboxReader) readLine() ([]byte, error) {
	line, err := m.br.ReadSlice('\n')
	m.off += int64(len(line))
	return line, err
}

// isEnvelope reports whether a line is an mbox From_ line: "From " then a sender, then a date
// with a hh:mm time and a four-digit year, in any of the orders writers used.
func isEnvelope(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("From "))
	if !ok || len(rest) > 300 {
		return false
	}
	f := bytes.Fields(rest)
	if len(f) < 4 {
		return false
	}
	clock, year := false, false
	for _, w := range f[1:] {
		switch {
		case len(w) >= 5 && w[2] == ':' && isDigits(w[:2]) && isDigits(w[3:5]):
			clock = true
		case len(w) == 4 && isDigits(w) && w[0] >= '1' && w[0] <= '2':
			year = true
		}
	}
	return clock && year
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// mboxMessage reads one message of an mbox.
type mboxMessage struct {
	m         *MboxReader
	rest      []byte // the part of the current line not yet returned
	lineStart bool   // the next byte read from the file starts a line
	done      bool
}

func (r *mboxMessage) Read(p []byte) (int, error) {
	for len(r.rest) == 0 {
		if r.done {
			return 0, io.EOF
		}
		m := r.m
		start := r.lineStart
		line, err := m.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			err = nil // a long line comes in pieces; only its first piece starts a line
		}
		r.lineStart = len(line) > 0 && line[len(line)-1] == '\n'
		if start && len(line) > 5 && line[0] == 'F' && isEnvelope(bytes.TrimRight(line, "\r\n")) {
			line = append([]byte(nil), line...) // Peek in headerFollows may move the buffer
			if r.headerFollows() {
				m.off += int64(len(line))
				m.nextEnv = strings.TrimRight(string(line), "\r\n")
				m.pending = true
				r.done = true
				return 0, io.EOF
			}
		}
		m.off += int64(len(line))
		if start && len(line) > 5 && line[0] == '>' {
			if t := bytes.TrimLeft(line, ">"); bytes.HasPrefix(t, []byte("From ")) {
				line = line[1:]
			}
		}
		r.rest = line
		if err != nil {
			r.done = true
			if !errors.Is(err, io.EOF) {
				return 0, err
			}
			if len(line) == 0 {
				return 0, io.EOF
			}
		}
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}

// headerFollows reports whether the line after a From_ line starts with a header field. A From_
// line followed by nothing (the end of the file) counts.
func (r *mboxMessage) headerFollows() bool {
	next, _ := r.m.br.Peek(512)
	if len(next) == 0 {
		return true
	}
	if k := bytes.IndexByte(next, '\n'); k >= 0 {
		next = next[:k]
	}
	return validKey(bytes.TrimRight(next, "\r"))
}

// WalkFunc is called by Walk for each message found: ref names it (a file path, or
// "path#offset" for a message of an mbox) and r reads its bytes until the call returns. When
// err is set, the message or file could not be read and r is nil; the walk goes on unless
// WalkFunc returns an error, which Walk then returns.
type WalkFunc func(ref string, r io.Reader, err error) error

// Walk reads every message under path: an mbox file, a Maildir (a directory with cur or new),
// one message file, or a directory of any of these (.eml files and others, at any depth; names
// starting with a dot are skipped). Files are visited in name order, so a walk is reproducible.
// A file that cannot be read is reported to fn and skipped; one bad file never stops the walk.
func Walk(path string, fn WalkFunc) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fn(path, nil, err)
	}
	if !fi.IsDir() {
		return walkFile(path, fn)
	}
	return walkDir(path, fn)
}

func walkDir(dir string, fn WalkFunc) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fn(dir, nil, err)
	}
	if isMaildir(entries) {
		for _, sub := range []string{"cur", "new"} {
			files, err := os.ReadDir(filepath.Join(dir, sub))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				if err := fn(filepath.Join(dir, sub), nil, err); err != nil {
					return err
				}
				continue
			}
			for _, f := range files {
				if f.IsDir() || strings.HasPrefix(f.Name(), ".") {
					continue
				}
				if err := walkMessageFile(filepath.Join(dir, sub, f.Name()), fn); err != nil {
					return err
				}
			}
		}
		// Maildir++ folders (".Sent") and other directories inside a Maildir.
		for _, e := range entries {
			if n := e.Name(); e.IsDir() && n != "cur" && n != "new" && n != "tmp" {
				if err := walkDir(filepath.Join(dir, n), fn); err != nil {
					return err
				}
			}
		}
		return nil
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if e.IsDir() {
			err = walkDir(p, fn)
		} else if e.Type().IsRegular() {
			err = walkFile(p, fn)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func isMaildir(entries []fs.DirEntry) bool {
	for _, e := range entries {
		if e.IsDir() && (e.Name() == "cur" || e.Name() == "new") {
			return true
		}
	}
	return false
}

// walkFile reads a file as an mbox when it starts with an envelope line, else as one message.
func walkFile(path string, fn WalkFunc) error {
	f, err := os.Open(path)
	if err != nil {
		return fn(path, nil, err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(512)
	if k := bytes.IndexByte(head, '\n'); k >= 0 {
		head = head[:k]
	}
	if !isEnvelope(bytes.TrimRight(head, "\r")) {
		return fn(path, br, nil)
	}
	mr := NewMboxReader(br)
	for {
		r, err := mr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fn(path, nil, fmt.Errorf("mbox: %w", err))
		}
		if err := fn(fmt.Sprintf("%s#%d", path, mr.Offset()), r, nil); err != nil {
			return err
		}
	}
}

func walkMessageFile(path string, fn WalkFunc) error {
	f, err := os.Open(path)
	if err != nil {
		return fn(path, nil, err)
	}
	defer f.Close()
	return fn(path, f, nil)
}
