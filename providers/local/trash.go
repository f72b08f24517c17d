package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"svc.dev/svc/providers"
)

// homeTrash is the trash to use: trash_dir, else $XDG_DATA_HOME/Trash.
func (p *Provider) homeTrash() string {
	if p.trashDir != "" {
		return p.trashDir
	}
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "Trash")
}

// Trash implements providers.Trasher. Files go to the freedesktop.org
// trash; Maildir messages get the T flag; mbox messages are unsupported.
func (p *Provider) Trash(_ context.Context, req providers.ActionRequest) (providers.ActionResult, error) {
	if err := p.fault("trash"); err != nil {
		return providers.ActionResult{}, err
	}
	src, err := p.sourceDir(req.SourceRef)
	if err != nil {
		return providers.ActionResult{}, err
	}
	return p.trash(src, req)
}

// trash trashes an object of a source directory.
func (p *Provider) trash(src string, req providers.ActionRequest) (providers.ActionResult, error) {
	e, err := p.resolve(src, req.ObjectID)
	if err != nil {
		return providers.ActionResult{}, err
	}
	// A file's or a Maildir message's version is its file's (fileVersion): checking it needs
	// no parse of the message, which a trash of a large mailbox would repeat per message.
	version := ""
	if e.kind == 'x' {
		o, err := p.object(req.ObjectID, e)
		if err != nil {
			return providers.ActionResult{}, err
		}
		version = o.Version
	} else {
		version = fileVersion(e.fi)
	}
	if err := checkVersion(req.ObjectID, req.ExpectedVersion, providers.Object{Version: version}); err != nil {
		return providers.ActionResult{}, err
	}
	switch e.kind {
	case 'm':
		unique, flags := splitMaildirName(filepath.Base(e.full))
		to := filepath.Join(e.maildir, "cur", unique+":2,"+addFlag(flags, 'T'))
		// rename(2) itself: os.Rename first lstats the target to refuse a directory there,
		// one more system call per message, and rename(2) refuses to put a file over a
		// directory anyway (EISDIR).
		if err := syscall.Rename(e.full, to); err != nil {
			return providers.ActionResult{}, fmt.Errorf("local: trash %q: %w", req.ObjectID, mapErr(&os.LinkError{Op: "rename", Old: e.full, New: to, Err: err}))
		}
		maildirs.moved(e.maildir, unique, to)
		return providers.ActionResult{ResultID: "maildir:T", Restorable: true}, nil
	case 'x':
		return providers.ActionResult{}, fmt.Errorf("local: trash %q: messages in an mbox: %w", req.ObjectID, providers.ErrUnsupported)
	}
	info, err := p.trashFile(e.full)
	if err != nil {
		return providers.ActionResult{}, fmt.Errorf("local: trash %q: %w", req.ObjectID, err)
	}
	return providers.ActionResult{ResultID: info, Restorable: true}, nil
}

// TrashBatch implements providers.BatchTrasher: each object is trashed as
// Trash trashes it, in order, and fails or succeeds on its own. Its worth
// is in the calls it saves a plugin host (one round trip for a batch).
func (p *Provider) TrashBatch(ctx context.Context, reqs []providers.ActionRequest) ([]providers.ActionOutcome, error) {
	if len(reqs) > providers.MaxBatchSize {
		return nil, fmt.Errorf("local: trash batch of %d, at most %d: %w", len(reqs), providers.MaxBatchSize, providers.ErrInvalidArgument)
	}
	outs := make([]providers.ActionOutcome, len(reqs))
	dirs := map[string]string{} // source ref -> its directory, resolved once a batch
	for i, req := range reqs {
		if outs[i].Err = p.fault("trash"); outs[i].Err != nil {
			continue
		}
		src, ok := dirs[req.SourceRef]
		if !ok {
			if src, outs[i].Err = p.sourceDir(req.SourceRef); outs[i].Err != nil {
				continue
			}
			dirs[req.SourceRef] = src
		}
		outs[i].Result, outs[i].Err = p.trash(src, req)
	}
	return outs, nil
}

func addFlag(flags string, f byte) string {
	if strings.IndexByte(flags, f) >= 0 {
		return flags
	}
	b := []byte(flags + string(f))
	// Maildir flags are kept in ASCII order.
	for i := len(b) - 1; i > 0 && b[i] < b[i-1]; i-- {
		b[i], b[i-1] = b[i-1], b[i]
	}
	return string(b)
}

// trashFile moves a file into a freedesktop.org trash and returns the
// path of its .trashinfo file (the result id Untrash needs).
func (p *Provider) trashFile(full string) (string, error) {
	trash := p.homeTrash()
	info, err := trashInto(trash, full)
	if errors.Is(err, syscall.EXDEV) && p.trashDir == "" {
		// The home trash is on another filesystem: use the top directory's
		// trash, $topdir/.Trash-$uid, with root as the top directory.
		info, err = trashInto(filepath.Join(p.root, ".Trash-"+strconv.Itoa(os.Getuid())), full)
	}
	return info, err
}

func trashInto(trash, full string) (string, error) {
	for _, d := range []string{"files", "info"} {
		if err := os.MkdirAll(filepath.Join(trash, d), 0o700); err != nil {
			return "", mapErr(err)
		}
	}
	// The name in the trash is the encoded one (names.go): the result id, the .trashinfo's
	// path, is then UTF-8 without control characters whatever the file's name; the
	// .trashinfo's Path= keeps the original name, percent-encoded as the specification says.
	base := encodeName(filepath.Base(full))
	ext := filepath.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	for n := 1; n < 10000; n++ {
		name := base
		if n > 1 {
			name = stem + "." + strconv.Itoa(n) + ext
		}
		infoPath := filepath.Join(trash, "info", name+".trashinfo")
		// The spec: create the info file with O_EXCL first; it reserves the
		// name, then the file is moved.
		f, err := os.OpenFile(infoPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) && leftReservation(trash, name, infoPath, full) {
			// Our own reservation from an attempt killed before it moved the file: take it again.
			f, err = os.OpenFile(infoPath, os.O_WRONLY|os.O_TRUNC, 0o600)
		}
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", mapErr(err)
		}
		u := url.URL{Path: full}
		_, werr := fmt.Fprintf(f, "[Trash Info]\nPath=%s\nDeletionDate=%s\n", u.EscapedPath(), time.Now().Format("2006-01-02T15:04:05"))
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = os.Rename(full, filepath.Join(trash, "files", name))
		}
		if werr != nil {
			os.Remove(infoPath)
			return "", werr
		}
		return infoPath, nil
	}
	return "", fmt.Errorf("no free name in the trash for %q", base)
}

// leftReservation reports whether infoPath is a reservation that a trash of full made and
// never completed (the process was killed between writing the info file and moving the file):
// nothing is in files/ under its name, and it names full. An empty info file is left alone:
// it may be another trash's reservation being written right now, and a process killed before
// writing it leaves only an empty file, which names nothing.
func leftReservation(trash, name, infoPath, full string) bool {
	if _, err := os.Lstat(filepath.Join(trash, "files", name)); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	raw, err := os.ReadFile(infoPath)
	if err != nil || len(raw) == 0 {
		return false
	}
	orig, err := trashInfoPath(string(raw))
	return err == nil && orig == full
}

// Untrash implements providers.Untrasher.
func (p *Provider) Untrash(_ context.Context, req providers.UntrashRequest) (providers.Object, error) {
	src, err := p.sourceDir(req.SourceRef)
	if err != nil {
		return providers.Object{}, err
	}
	rel, err := relID(req.ObjectID)
	if err != nil {
		return providers.Object{}, err
	}
	target := filepath.Join(src, filepath.FromSlash(rel))
	if req.ResultID == "maildir:T" {
		dir := filepath.Dir(target)
		m, err := findMaildirMessage(dir, filepath.Base(target))
		if err != nil {
			return providers.Object{}, fmt.Errorf("local: untrash %q: %w", req.ObjectID, providers.ErrNotFound)
		}
		if strings.Contains(m.flags, "T") {
			unique, flags := splitMaildirName(filepath.Base(m.file))
			if err := os.Rename(m.file, filepath.Join(dir, "cur", unique+":2,"+strings.ReplaceAll(flags, "T", ""))); err != nil {
				return providers.Object{}, fmt.Errorf("local: untrash %q: %w", req.ObjectID, mapErr(err))
			}
		}
		return p.current(src, req.ObjectID)
	}
	infoPath := req.ResultID
	if filepath.Ext(infoPath) != ".trashinfo" || filepath.Base(filepath.Dir(infoPath)) != "info" {
		return providers.Object{}, fmt.Errorf("local: untrash: result id %q: %w", req.ResultID, providers.ErrInvalidArgument)
	}
	raw, err := os.ReadFile(infoPath)
	if errors.Is(err, fs.ErrNotExist) {
		// Already restored (Untrash is idempotent) or purged.
		if o, err := p.current(src, req.ObjectID); err == nil {
			return o, nil
		}
		return providers.Object{}, fmt.Errorf("local: untrash %q: no longer in the trash: %w", req.ObjectID, providers.ErrNotFound)
	}
	if err != nil {
		return providers.Object{}, fmt.Errorf("local: untrash %q: %w", req.ObjectID, mapErr(err))
	}
	orig, err := trashInfoPath(string(raw))
	if err != nil || orig != target {
		return providers.Object{}, fmt.Errorf("local: untrash: %q does not hold %q: %w", req.ResultID, req.ObjectID, providers.ErrInvalidArgument)
	}
	if _, err := os.Lstat(target); err == nil {
		return providers.Object{}, fmt.Errorf("local: untrash %q: %w", req.ObjectID, providers.ErrAlreadyExists)
	}
	trashed := filepath.Join(filepath.Dir(filepath.Dir(infoPath)), "files", strings.TrimSuffix(filepath.Base(infoPath), ".trashinfo"))
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return providers.Object{}, mapErr(err)
	}
	if err := os.Rename(trashed, target); err != nil {
		return providers.Object{}, fmt.Errorf("local: untrash %q: %w", req.ObjectID, mapErr(err))
	}
	os.Remove(infoPath)
	return p.current(src, req.ObjectID)
}

// trashInfoPath returns the original path a .trashinfo records.
func trashInfoPath(info string) (string, error) {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Path="); ok {
			return url.PathUnescape(v)
		}
	}
	return "", errors.New("no Path")
}

func (p *Provider) current(src, id string) (providers.Object, error) {
	e, err := p.resolve(src, id)
	if err != nil {
		return providers.Object{}, err
	}
	return p.object(id, e)
}

// Remove implements providers.Remover: files and Maildir messages are
// deleted; mbox messages are unsupported.
func (p *Provider) Remove(_ context.Context, req providers.ActionRequest) (providers.ActionResult, error) {
	src, err := p.sourceDir(req.SourceRef)
	if err != nil {
		return providers.ActionResult{}, err
	}
	e, err := p.resolve(src, req.ObjectID)
	if err != nil {
		return providers.ActionResult{}, err
	}
	if e.kind == 'x' {
		return providers.ActionResult{}, fmt.Errorf("local: remove %q: messages in an mbox: %w", req.ObjectID, providers.ErrUnsupported)
	}
	o, err := p.object(req.ObjectID, e)
	if err != nil {
		return providers.ActionResult{}, err
	}
	if err := checkVersion(req.ObjectID, req.ExpectedVersion, o); err != nil {
		return providers.ActionResult{}, err
	}
	if err := os.Remove(e.full); err != nil {
		return providers.ActionResult{}, fmt.Errorf("local: remove %q: %w", req.ObjectID, mapErr(err))
	}
	return providers.ActionResult{ResultID: "removed"}, nil
}
