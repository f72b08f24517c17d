// Package hostile is a provider that misbehaves on purpose, built on the
// provider SDK like any third-party provider, and a suite (Run) that checks
// that a host survives it: a plugin that freezes, answers past the
// protocol's message limit, streams more than it may, lists an object twice
// or without end, opens slowly, crashes or lies about a trash, or looks for
// the host's secrets in its environment.
//
// Serve it as a plugin from a main (or a test binary's TestMain):
//
//	plugin.Serve(hostile.Description, hostile.New)
//
// and open it through the host under test; Run's Harness says how. The
// execute and plan packages of svc use the same provider through the real
// plugin boundary for the checks that need an execution or a plan (an id
// listed twice, a trash whose outcome is unknown, a fetch larger than the
// plan). Some modes stop or kill their own process: run them only through a
// plugin.
//
// Configuration (providers.Config):
//
//	objects    how many objects the source "src" holds (default 10): ids
//	           "obj-0000", ..., 16 bytes of content each, version "v1", SHA-256 given
//	page_size  objects a page (default 3)
//	source     the source ref it holds (default Source); "*" holds every ref
//	           (one listing under any ref, as for svc's seeded dev sources)
//	mode_source  with source "*": the fetch and trash misbehaviours apply to
//	           this source ref only (the others answer honestly)
//	dir        a directory for state that survives the plugin's restarts
//	           (what was trashed); required for Trash and Untrash
//	mode       a comma-separated list of misbehaviours:
//	  repeat_ids     every page after the first starts with the last object
//	                 of the page before (offset pagination over a changing listing)
//	  endless        the listing never ends: every page has a next page token
//	  wide_ids       ids are padded to 1,000 bytes
//	  temp_names     ids (and names) have the form of svc's own temporary
//	                 files, ".svc-write-<32 hex digits>.tmp"
//	  huge_page      the first page is larger than the protocol's 64 MiB message limit
//	  freeze_fetch   Fetch stops its own process (SIGSTOP), as a frozen plugin
//	  hang_fetch     Fetch blocks for an hour, ignoring its context
//	  big_fetch      Fetch declares and streams fetch_size bytes (default 4 MiB)
//	                 whatever the listing said
//	  slow_open      New sleeps open_delay (default 2 s) before answering
//	  trash_crash    Trash trashes the object, then exits the process
//	  trash_lie      Trash trashes the object, then answers ErrTransient
//	  env            List lists the plugin's environment: one object per
//	                 variable, its name as the id
package hostile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"svc.dev/svc/providers"
)

// Source is the source ref of the one source the provider holds.
const Source = "src"

// Description describes the hostile provider: it can trash and untrash, but
// not write (so an undo has to untrash). Its name is simulated; a third
// party testing its own host under another name copies it and changes Name.
var Description = providers.Description{
	Name:             providers.Simulated,
	ProtocolVersion:  providers.ProtocolVersion,
	OperationClasses: providers.OperationClassesFor([]providers.Capability{providers.CapTrash, providers.CapUntrash}),
	Capabilities:     []providers.Capability{providers.CapTrash, providers.CapUntrash},
	ObjectKinds:      []providers.Kind{providers.KindFile},
	MarkerKinds:      []providers.MarkerKind{providers.MarkerNone},
}

// Provider is the hostile provider; New makes one.
type Provider struct {
	source      string
	modeSource  string
	n, pageSize int
	dir         string
	modes       map[string]bool
	fetchSize   int64
}

// New is the provider's factory.
func New(ctx context.Context, cfg providers.Config) (providers.Provider, error) {
	p := &Provider{source: Source, n: 10, pageSize: 3, dir: cfg["dir"], modes: map[string]bool{}, fetchSize: 4 << 20}
	if v := cfg["source"]; v != "" {
		p.source = v
	}
	p.modeSource = cfg["mode_source"]
	for _, m := range strings.Split(cfg["mode"], ",") {
		if m != "" {
			p.modes[m] = true
		}
	}
	var err error
	num := func(key string, dst *int) {
		if v, ok := cfg[key]; ok && err == nil {
			*dst, err = strconv.Atoi(v)
		}
	}
	num("objects", &p.n)
	num("page_size", &p.pageSize)
	if v, ok := cfg["fetch_size"]; ok && err == nil {
		p.fetchSize, err = strconv.ParseInt(v, 10, 64)
	}
	if err != nil || p.pageSize <= 0 {
		return nil, fmt.Errorf("hostile: bad configuration: %v: %w", err, providers.ErrInvalidArgument)
	}
	if p.modes["slow_open"] {
		d, _ := time.ParseDuration(cfg["open_delay"])
		if d <= 0 {
			d = 2 * time.Second
		}
		time.Sleep(d) // ignoring ctx, as a careless provider would
	}
	return p, nil
}

// ObjectID returns the id of the i-th object of a provider configured with
// cfg.
func ObjectID(cfg providers.Config, i int) string {
	if strings.Contains(cfg["mode"], "temp_names") {
		return fmt.Sprintf("%s%032x%s", tempPrefix, i, tempSuffix)
	}
	id := fmt.Sprintf("obj-%04d", i)
	if strings.Contains(cfg["mode"], "wide_ids") {
		id += strings.Repeat("w", 1000-len(id))
	}
	return id
}

// The form of svc's temporary files (providers/local).
const tempPrefix, tempSuffix = ".svc-write-", ".tmp"

func (p *Provider) id(i int) string {
	switch {
	case p.modes["wide_ids"]:
		return ObjectID(providers.Config{"mode": "wide_ids"}, i)
	case p.modes["temp_names"]:
		return ObjectID(providers.Config{"mode": "temp_names"}, i)
	}
	return ObjectID(nil, i)
}

// index returns the position of the object with id, or -1.
func (p *Provider) index(id string) int {
	var i int64
	var err error
	if p.modes["temp_names"] {
		hex, _ := strings.CutSuffix(strings.TrimPrefix(id, tempPrefix), tempSuffix)
		i, err = strconv.ParseInt(hex, 16, 32)
	} else {
		i, err = strconv.ParseInt(strings.TrimRight(strings.TrimPrefix(id, "obj-"), "w"), 10, 32)
	}
	if err != nil || i < 0 || id != p.id(int(i)) {
		return -1
	}
	return int(i)
}

// Content returns the content of the object with id.
func Content(id string) []byte {
	s := sha256.Sum256([]byte(id))
	return []byte(hex.EncodeToString(s[:8]))
}

func (p *Provider) object(id string) providers.Object {
	c := Content(id)
	s := sha256.Sum256(c)
	return providers.Object{ID: id, Version: "v1", Kind: providers.KindFile, Name: id, SizeBytes: int64(len(c)),
		SHA256: hex.EncodeToString(s[:]), ModifiedAt: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// Describe returns Description.
func (p *Provider) Describe(context.Context) (providers.Description, error) { return Description, nil }

// List lists the source, misbehaving as configured.
func (p *Provider) List(_ context.Context, req providers.ListRequest) (providers.Page, error) {
	if !p.holds(req.SourceRef) {
		return providers.Page{}, fmt.Errorf("source %q: %w", req.SourceRef, providers.ErrNotFound)
	}
	if p.modes["env"] {
		page := providers.Page{Marker: providers.Marker{Kind: providers.MarkerNone}}
		for _, kv := range os.Environ() {
			k, _, _ := strings.Cut(kv, "=")
			if k != "" {
				page.Objects = append(page.Objects, providers.Object{ID: k, Kind: providers.KindFile})
			}
		}
		return page, nil
	}
	if p.modes["huge_page"] {
		// 70 objects of 1 MiB of metadata each: past the 64 MiB limit.
		meta := make(map[string]string, 256)
		for i := range 256 {
			meta[fmt.Sprintf("k%03d", i)] = strings.Repeat("v", 4096)
		}
		page := providers.Page{Marker: providers.Marker{Kind: providers.MarkerNone}}
		for i := range 70 {
			o := p.object(p.id(i))
			o.Metadata = meta
			page.Objects = append(page.Objects, o)
		}
		return page, nil
	}
	start := 0
	if req.PageToken != "" {
		var err error
		if start, err = strconv.Atoi(req.PageToken); err != nil || start < 0 {
			return providers.Page{}, fmt.Errorf("page token %q: %w", req.PageToken, providers.ErrInvalidArgument)
		}
	}
	var page providers.Page
	first := start
	if p.modes["repeat_ids"] && start > 0 {
		first = start - 1 // the last object of the page before, again
	}
	end := start + p.pageSize
	for i := first; i < end && (i < p.n || p.modes["endless"]); i++ {
		id := p.id(i)
		if p.trashed(id) {
			continue
		}
		page.Objects = append(page.Objects, p.object(id))
	}
	if end < p.n || p.modes["endless"] {
		page.NextPageToken = strconv.Itoa(end)
	} else {
		page.Marker = providers.Marker{Kind: providers.MarkerNone}
	}
	return page, nil
}

func (p *Provider) holds(ref string) bool { return p.source == "*" || ref == p.source }

// misbehaves reports whether the fetch and trash misbehaviours apply to a source ref.
func (p *Provider) misbehaves(ref string) bool { return p.modeSource == "" || ref == p.modeSource }

// Changes knows no changes.
func (p *Provider) Changes(context.Context, providers.ChangesRequest) (providers.ChangePage, error) {
	return providers.ChangePage{}, providers.ErrMarkerExpired
}

func (p *Provider) find(ref, id string) (providers.Object, error) {
	if !p.holds(ref) {
		return providers.Object{}, fmt.Errorf("source %q: %w", ref, providers.ErrNotFound)
	}
	i := p.index(id)
	if i < 0 || (i >= p.n && !p.modes["endless"]) || p.trashed(id) {
		return providers.Object{}, fmt.Errorf("object %q: %w", id, providers.ErrNotFound)
	}
	return p.object(id), nil
}

// Fetch returns an object's content, misbehaving as configured.
func (p *Provider) Fetch(_ context.Context, req providers.FetchRequest) (*providers.Content, error) {
	o, err := p.find(req.SourceRef, req.ObjectID)
	if err != nil {
		return nil, err
	}
	if req.ExpectedVersion != "" && req.ExpectedVersion != o.Version {
		return nil, &providers.VersionMismatchError{ObjectID: o.ID, Expected: req.ExpectedVersion, Actual: o.Version}
	}
	switch {
	case !p.misbehaves(req.SourceRef):
	case p.modes["freeze_fetch"]:
		_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		// Other threads may run on a moment before the stop takes them;
		// this call never answers either way.
		time.Sleep(time.Hour)
	case p.modes["hang_fetch"]:
		time.Sleep(time.Hour)
	case p.modes["big_fetch"]:
		o.SizeBytes, o.SHA256 = p.fetchSize, ""
		return &providers.Content{Object: o, Body: io.NopCloser(io.LimitReader(zeros{}, p.fetchSize))}, nil
	}
	return &providers.Content{Object: o, Body: io.NopCloser(bytes.NewReader(Content(o.ID)))}, nil
}

type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

// Trash trashes an object (recorded under dir), misbehaving as configured.
func (p *Provider) Trash(_ context.Context, req providers.ActionRequest) (providers.ActionResult, error) {
	o, err := p.find(req.SourceRef, req.ObjectID)
	if err != nil {
		return providers.ActionResult{}, err
	}
	if req.ExpectedVersion != "" && req.ExpectedVersion != o.Version {
		return providers.ActionResult{}, &providers.VersionMismatchError{ObjectID: o.ID, Expected: req.ExpectedVersion, Actual: o.Version}
	}
	if p.dir == "" {
		return providers.ActionResult{}, fmt.Errorf("hostile: trash needs dir: %w", providers.ErrUnsupported)
	}
	if err := os.WriteFile(p.trashPath(o.ID), nil, 0o600); err != nil {
		return providers.ActionResult{}, err
	}
	switch {
	case !p.misbehaves(req.SourceRef):
	case p.modes["trash_crash"]:
		os.Exit(3)
	case p.modes["trash_lie"]:
		return providers.ActionResult{}, fmt.Errorf("hostile: it was trashed, but says: %w", providers.ErrTransient)
	}
	return providers.ActionResult{ResultID: "trash/" + o.ID, Restorable: true}, nil
}

// Untrash brings a trashed object back.
func (p *Provider) Untrash(_ context.Context, req providers.UntrashRequest) (providers.Object, error) {
	if p.dir == "" || !p.trashed(req.ObjectID) {
		return providers.Object{}, fmt.Errorf("object %q is not in the trash: %w", req.ObjectID, providers.ErrNotFound)
	}
	if err := os.Remove(p.trashPath(req.ObjectID)); err != nil {
		return providers.Object{}, err
	}
	return p.find(req.SourceRef, req.ObjectID)
}

func (p *Provider) trashPath(id string) string {
	s := sha256.Sum256([]byte(id))
	return filepath.Join(p.dir, hex.EncodeToString(s[:8])+".trashed")
}

func (p *Provider) trashed(id string) bool {
	if p.dir == "" {
		return false
	}
	_, err := os.Stat(p.trashPath(id))
	return err == nil
}

// Trashed returns the ids of the objects a provider with state directory
// dir trashed, among the first n.
func Trashed(dir string, n int) []string {
	p := &Provider{dir: dir}
	var out []string
	for i := range n {
		if id := ObjectID(nil, i); p.trashed(id) {
			out = append(out, id)
		}
	}
	return slices.Clip(out)
}
