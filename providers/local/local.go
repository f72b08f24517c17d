package local

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"svc.dev/svc/mail"
	"svc.dev/svc/providers"
)

var caps = []providers.Capability{providers.CapTrash, providers.CapRemove, providers.CapUntrash, providers.CapWrite, providers.CapQuota, providers.CapTrashBatch, providers.CapFetchBatch}

// Description is the vendor_d_local provider's description.
var Description = providers.Description{
	Name:             providers.VendorDLocal,
	ProtocolVersion:  providers.ProtocolVersion,
	DisplayName:      "Local folders, Maildir and mbox",
	OperationClasses: providers.OperationClassesFor(caps),
	Capabilities:     caps,
	ObjectKinds:      []providers.Kind{providers.KindFile, providers.KindPhoto, providers.KindVideo, providers.KindMessage},
	MarkerKinds:      []providers.MarkerKind{providers.MarkerSnapshotHash},
}

// Provider is a vendor_d_local provider instance.
type Provider struct {
	root     string
	trashDir string // explicit trash_dir, or "" for the default

	// transientEvery, from the config key transient_every (fault injection for tests), makes
	// every Nth fetch or trash fail with providers.ErrTransient before doing anything.
	transientEvery int64
	calls          atomic.Int64

	swept sync.Map // directories whose leftover write temporaries were removed
}

// fault returns the injected transient failure of this call, if it is one.
func (p *Provider) fault(op string) error {
	if p.transientEvery > 0 && p.calls.Add(1)%p.transientEvery == 0 {
		return fmt.Errorf("local: %s: injected failure: %w", op, providers.ErrTransient)
	}
	return nil
}

var (
	_ providers.Provider  = (*Provider)(nil)
	_ providers.Trasher   = (*Provider)(nil)
	_ providers.Remover   = (*Provider)(nil)
	_ providers.Untrasher = (*Provider)(nil)
	_ providers.Writer    = (*Provider)(nil)
	_ providers.Quotaer   = (*Provider)(nil)

	_ providers.BatchTrasher = (*Provider)(nil)
	_ providers.BatchFetcher = (*Provider)(nil)
)

// New opens a vendor_d_local provider. It is a providers.Factory.
func New(_ context.Context, cfg providers.Config) (providers.Provider, error) {
	root := cfg["root"]
	if root == "" {
		return nil, fmt.Errorf("local: config root is required: %w", providers.ErrInvalidArgument)
	}
	for k := range cfg {
		if k != "root" && k != "trash_dir" && k != "transient_every" {
			return nil, fmt.Errorf("local: unknown config key %q: %w", k, providers.ErrInvalidArgument)
		}
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("local: root: %v: %w", err, providers.ErrInvalidArgument)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("local: root %q is not a directory: %w", abs, providers.ErrNotFound)
	}
	p := &Provider{root: abs}
	if n := cfg["transient_every"]; n != "" {
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil || v < 1 {
			return nil, fmt.Errorf("local: transient_every must be a positive integer: %w", providers.ErrInvalidArgument)
		}
		p.transientEvery = v
	}
	if t := cfg["trash_dir"]; t != "" {
		if p.trashDir, err = filepath.Abs(t); err != nil {
			return nil, fmt.Errorf("local: trash_dir: %v: %w", err, providers.ErrInvalidArgument)
		}
	}
	return p, nil
}

// Describe implements providers.Provider.
func (p *Provider) Describe(context.Context) (providers.Description, error) { return Description, nil }

// sourceDir resolves a source ref to a directory under root.
func (p *Provider) sourceDir(ref string) (string, error) {
	clean := path.Clean("/" + ref)
	if ref != "" && (strings.Contains(ref, "\\") || clean != "/"+strings.Trim(ref, "/")) {
		return "", fmt.Errorf("local: source %q: %w", ref, providers.ErrInvalidArgument)
	}
	dir := filepath.Join(p.root, filepath.FromSlash(clean))
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return "", fmt.Errorf("local: source %q: %w", ref, providers.ErrNotFound)
	}
	return dir, nil
}

// relID checks an object id and returns the slash-separated path of the file it stands for
// (its names decoded, see names.go): a clean relative path. A backslash is a separator only
// where the platform's is.
func relID(id string) (string, error) {
	raw, err := decodeID(id)
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(raw, "/") || (filepath.Separator == '\\' && strings.Contains(raw, "\\")) || path.Clean(raw) != raw || raw == ".." || strings.HasPrefix(raw, "../") {
		return "", fmt.Errorf("local: object id %q: %w", id, providers.ErrNotFound)
	}
	return raw, nil
}

func isTrashName(name string) bool { return strings.HasPrefix(name, ".Trash") }

func isMaildir(dir string) bool {
	a, err1 := os.Stat(filepath.Join(dir, "cur"))
	b, err2 := os.Stat(filepath.Join(dir, "new"))
	return err1 == nil && err2 == nil && a.IsDir() && b.IsDir()
}

func isMbox(full, name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".mbox", ".mbx":
		return true
	case "":
		f, err := os.Open(full)
		if err != nil {
			return false
		}
		defer f.Close()
		var b [5]byte
		n, _ := io.ReadFull(f, b[:])
		return string(b[:n]) == "From "
	}
	return false
}

func fileVersion(fi fs.FileInfo) string {
	v := "m" + strconv.FormatInt(fi.ModTime().UnixNano(), 36) + "-s" + strconv.FormatInt(fi.Size(), 36)
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		v += "-i" + strconv.FormatUint(st.Ino, 36)
	}
	return v
}

func kindOf(name string) (providers.Kind, string) {
	ext := strings.ToLower(filepath.Ext(name))
	mt := mime.TypeByExtension(ext)
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	switch ext {
	case ".jpg", ".jpeg", ".png", ".gif", ".heic", ".webp", ".tif", ".tiff":
		return providers.KindPhoto, mt
	case ".mp4", ".mov", ".mkv", ".avi", ".webm":
		return providers.KindVideo, mt
	}
	return providers.KindFile, mt
}

// fileObject is a file's object; id is its encoded path (names.go).
func fileObject(id string, fi fs.FileInfo) providers.Object {
	kind, mt := kindOf(fi.Name())
	o := providers.Object{
		ID:         id,
		Version:    fileVersion(fi),
		Kind:       kind,
		Name:       encodeName(fi.Name()),
		Path:       id,
		SizeBytes:  fi.Size(),
		MIMEType:   mt,
		ModifiedAt: fi.ModTime().UTC(),
	}
	if dir := path.Dir(id); dir != "." {
		o.ParentID = dir
		o.Containers = []string{dir}
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Mode&0o004 != 0 {
		o.Shared = true // world-readable: the nearest local notion of shared
	}
	return o
}

// headers reads a message's headers and header facts (providers.ReadMail), from at most
// the first MiB of the file.
func headers(r io.Reader) (*providers.MessageHeaders, map[string]string) {
	return providers.ReadMail(r)
}

// maildirMessage is one message file of a Maildir.
type maildirMessage struct {
	unique string
	file   string // full path
	flags  string
	fi     fs.FileInfo // its file's, when found by maildirIndex
}

func splitMaildirName(name string) (unique, flags string) {
	unique, info, _ := strings.Cut(name, ":")
	if strings.HasPrefix(info, "2,") {
		flags = info[2:]
	}
	return unique, flags
}

// maildirMessages lists a Maildir's messages in cur/ and new/, sorted by
// unique name.
func maildirMessages(dir string) ([]maildirMessage, error) {
	var msgs []maildirMessage
	for _, sub := range []string{"cur", "new"} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			u, f := splitMaildirName(e.Name())
			msgs = append(msgs, maildirMessage{unique: u, file: filepath.Join(dir, sub, e.Name()), flags: f})
		}
	}
	slices.SortFunc(msgs, func(a, b maildirMessage) int { return strings.Compare(a.unique, b.unique) })
	return msgs, nil
}

func findMaildirMessage(dir, unique string) (maildirMessage, error) {
	msgs, err := maildirMessages(dir)
	if err != nil {
		return maildirMessage{}, err
	}
	i, ok := slices.BinarySearchFunc(msgs, unique, func(m maildirMessage, u string) int { return strings.Compare(m.unique, u) })
	if !ok {
		return maildirMessage{}, fs.ErrNotExist
	}
	return msgs[i], nil
}

func maildirObject(id, container string, m maildirMessage, fi fs.FileInfo) providers.Object {
	f, err := os.Open(m.file)
	var h *providers.MessageHeaders
	facts := map[string]string{}
	if err == nil {
		h, facts = headers(f)
		f.Close()
	} else {
		h = &providers.MessageHeaders{}
		facts[mail.FactUnreadable] = "could not be opened"
	}
	return maildirObjectOf(id, container, m, fi, h, facts)
}

// maildirObjectOf is a Maildir message's object from its file's information and its headers.
func maildirObjectOf(id, container string, m maildirMessage, fi fs.FileInfo, h *providers.MessageHeaders, facts map[string]string) providers.Object {
	o := providers.Object{
		ID:         id,
		ParentID:   container,
		Version:    fileVersion(fi),
		Kind:       providers.KindMessage,
		Name:       h.Subject,
		Path:       id,
		SizeBytes:  fi.Size(),
		MIMEType:   "message/rfc822",
		Containers: []string{container},
		ModifiedAt: fi.ModTime().UTC(),
		Starred:    strings.Contains(m.flags, "F"),
		Message:    h,
		Metadata:   providers.WithFacts(map[string]string{"maildir_flags": encodeName(m.flags)}, facts),
	}
	if !h.Date.IsZero() {
		o.CreatedAt = h.Date
	}
	return o
}

// entry is what an id resolves to.
type entry struct {
	kind    byte // 'f' file, 'm' maildir message, 'x' mbox message
	full    string
	fi      fs.FileInfo
	maildir string // for 'm': the Maildir directory
	msg     maildirMessage
	offset  int64 // for 'x'
}

// resolve finds the object with the given id in a source directory.
func (p *Provider) resolve(src, id string) (entry, error) {
	return p.resolveAs(src, id, true)
}

// resolveAs is resolve; with stat false, a message of a Maildir this process has read before
// is taken at its remembered file without checking that the file is still there (entry.fi is
// then nil): the caller opens it, and resolves again if that fails because it moved.
func (p *Provider) resolveAs(src, id string, stat bool) (entry, error) {
	raw, err := relID(id)
	if err != nil {
		return entry{}, err
	}
	notFound := fmt.Errorf("local: object %q: %w", id, providers.ErrNotFound)
	full := filepath.Join(src, filepath.FromSlash(raw))
	for _, part := range strings.Split(raw, "/") {
		if isTrashName(part) {
			return entry{}, notFound
		}
	}
	// A message of a Maildir this process has read is found by its remembered file (at most
	// one lstat), before anything else: a fetch and a trash of every message of a mailbox
	// would otherwise pay for the checks below each time. (A file in the Maildir's own
	// directory named like one of its messages would have the same id; the message wins.)
	dir, unique := filepath.Dir(full), filepath.Base(full)
	if m, ok := maildirs.known(dir, unique, stat); ok && !strings.Contains(m.flags, "T") {
		return entry{kind: 'm', full: m.file, fi: m.fi, maildir: dir, msg: m}, nil
	}
	if fi, err := os.Lstat(full); err == nil && fi.Mode().IsRegular() {
		if isMaildir(filepath.Dir(filepath.Dir(full))) && (filepath.Base(filepath.Dir(full)) == "cur" || filepath.Base(filepath.Dir(full)) == "new") {
			return entry{}, notFound // message files are addressed by Maildir and unique name
		}
		if !isMbox(full, fi.Name()) {
			return entry{kind: 'f', full: full, fi: fi}, nil
		}
	}
	if isMaildir(dir) {
		m, err := maildirs.find(dir, unique)
		if err == nil && !strings.Contains(m.flags, "T") {
			return entry{kind: 'm', full: m.file, fi: m.fi, maildir: dir, msg: m}, nil
		}
	}
	if i := strings.LastIndexByte(raw, '#'); i > 0 {
		file := filepath.Join(src, filepath.FromSlash(raw[:i]))
		off, err := strconv.ParseInt(raw[i+1:], 10, 64)
		if fi, serr := os.Stat(file); err == nil && serr == nil && fi.Mode().IsRegular() && isMbox(file, fi.Name()) {
			return entry{kind: 'x', full: file, fi: fi, offset: off}, nil
		}
	}
	return entry{}, notFound
}

// object returns the current metadata of a resolved entry.
func (p *Provider) object(id string, e entry) (providers.Object, error) {
	switch e.kind {
	case 'f':
		return fileObject(id, e.fi), nil
	case 'm':
		container := path.Dir(id)
		return maildirObject(id, container, e.msg, e.fi), nil
	}
	f, err := os.Open(e.full)
	if err != nil {
		return providers.Object{}, err
	}
	defer f.Close()
	it := newMboxReader(f, e.offset)
	m, ok, err := it.next()
	if err != nil {
		return providers.Object{}, err
	}
	if !ok || m.offset != e.offset {
		return providers.Object{}, fmt.Errorf("local: object %q: %w", id, providers.ErrNotFound)
	}
	return mboxObject(id[:strings.LastIndexByte(id, '#')], m), nil
}

func checkVersion(id, expected string, o providers.Object) error {
	if expected != "" && expected != o.Version {
		return &providers.VersionMismatchError{ObjectID: id, Expected: expected, Actual: o.Version}
	}
	return nil
}
