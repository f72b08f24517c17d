package search

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"mime"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/mapping"
)

// Errors of the index.
var (
	// ErrInvalidQuery is returned when a query string does not parse, or names a field that
	// is not in Fields. Its message says what is wrong and may be shown to the user.
	ErrInvalidQuery = errors.New("invalid query")
	// ErrInvalidPosition is returned (it wraps ErrInvalidQuery) when Query.After is not a
	// position a search returned.
	ErrInvalidPosition = fmt.Errorf("%w: bad position", ErrInvalidQuery)
	// ErrClosed is returned when the index was closed.
	ErrClosed = errors.New("search index closed")
)

// MaxBodyBytes bounds the text of one object that is indexed (and kept for snippets): the
// start of a longer text is searchable, the rest is not.
const MaxBodyBytes = 256 << 10

// Doc is what the index holds of one vault object.
type Doc struct {
	ID                           string // the vault object id
	Subject, From, To, Cc        string // a message's headers
	Name                         string // the object's name (a file name, a message's subject when it has no name)
	Body                         string // the extracted text
	Type                         string // the content kind: message, file, photo, ...
	MIMEType, Provider, SourceID string
	State                        string // the vault object state (committed, cold)
	Date                         time.Time
}

// Text fields are searched by unfielded words; keyword fields match whole values.
var (
	textFields    = []string{"subject", "from", "to", "cc", "name", "body"}
	keywordFields = []string{"type", "mime_type", "provider", "source_id", "state"}
)

// Fields are the names a query may use in field:value.
var Fields = append(append([]string{}, textFields...), keywordFields...)

// TextSource returns, at search time, the document a hit was indexed from (its subject, name
// and body at least): the index stores no text of its own, so snippets are cut from what this
// returns (for the vault: the object's record and manifest, and its text read to the end and
// verified). It must return the fields as they were indexed (Put clips Body to MaxBodyBytes;
// longer is fine): a field that no longer matches the positions indexed gives no snippet.
type TextSource func(ctx context.Context, tenant, id string) (Doc, error)

// Options configures an index; nil means defaults.
type Options struct {
	// Text gives the text snippets are cut from; with it the index stores no text. nil: the
	// index stores subject, name and body to highlight them (as before).
	Text TextSource
}

// Index is the vault's search index: one bleve index per tenant under a directory. It is safe
// for concurrent use.
type Index struct {
	dir  string
	text TextSource
	// slots bounds the queries that run at once (half the cores, at least one), so that
	// searches, however many, leave cores to every other request.
	slots chan struct{}

	mu      sync.Mutex
	closed  bool
	tenants map[string]*tenantIndex
}

// tenantIndex is one tenant's index. Searches and updates hold mu for reading; a rebuild
// swaps idx holding it for writing. While a rebuild runs, every update is also recorded in
// pending and replayed on the new index before the swap.
type tenantIndex struct {
	dir string
	mu  sync.RWMutex
	idx bleve.Index

	pmu     sync.Mutex
	pending *[]func(*bleve.Batch)
}

// Open opens the index directory, creating it, and removes what an interrupted rebuild left.
// Without a TextSource (OpenWith gives one) the index keeps subject, name and body as stored
// fields, in plaintext, to cut snippets from: the server opens it with one.
func Open(dir string) (*Index, error) { return OpenWith(dir, nil) }

// OpenWith is Open with options.
func OpenWith(dir string, opts *Options) (*Index, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open search index: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("open search index: %w", err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".rebuild-") || strings.Contains(e.Name(), ".old-") {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
	x := &Index{dir: dir, tenants: map[string]*tenantIndex{}, slots: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2))}
	if opts != nil {
		x.text = opts.Text
	}
	return x, nil
}

// Close closes every tenant's index.
func (x *Index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.closed = true
	var errs error
	for _, t := range x.tenants {
		t.mu.Lock()
		errs = errors.Join(errs, t.idx.Close())
		t.mu.Unlock()
	}
	x.tenants = map[string]*tenantIndex{}
	return errs
}

// Drop closes a tenant's index and removes it from the disk (the tenant's account was
// erased): nothing of what it indexed is left. A later Put makes a new, empty one.
func (x *Index) Drop(tenant string) error {
	x.mu.Lock()
	t, ok := x.tenants[tenant]
	delete(x.tenants, tenant)
	x.mu.Unlock()
	if ok {
		t.mu.Lock()
		err := t.idx.Close()
		t.mu.Unlock()
		if err != nil {
			return fmt.Errorf("drop search index: %w", err)
		}
	}
	if err := os.RemoveAll(x.path(tenant)); err != nil {
		return fmt.Errorf("drop search index: %w", err)
	}
	return nil
}

func (x *Index) path(tenant string) string {
	return filepath.Join(x.dir, url.PathEscape(tenant))
}

// Exists reports whether a tenant has an index (an empty one counts).
func (x *Index) Exists(tenant string) bool {
	_, err := os.Stat(filepath.Join(x.path(tenant), "index_meta.json"))
	return err == nil
}

// tenant returns a tenant's index, opening or creating it.
func (x *Index) tenant(tenant string) (*tenantIndex, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil, ErrClosed
	}
	if t, ok := x.tenants[tenant]; ok {
		return t, nil
	}
	dir := x.path(tenant)
	idx, err := openOrCreate(dir, x.storesText())
	if err != nil {
		return nil, err
	}
	t := &tenantIndex{dir: dir, idx: idx}
	x.tenants[tenant] = t
	return t, nil
}

// storesText reports whether new indexes keep subject, name and body as stored fields: only
// when no TextSource gives the text for snippets (Open without options, as before).
func (x *Index) storesText() bool { return x.text == nil }

func openOrCreate(dir string, storeText bool) (bleve.Index, error) {
	idx, err := bleve.Open(dir)
	if errors.Is(err, bleve.ErrorIndexPathDoesNotExist) {
		idx, err = bleve.New(dir, newMapping(storeText))
	}
	if err != nil {
		return nil, fmt.Errorf("open search index %s: %w", filepath.Base(dir), err)
	}
	return idx, nil
}

// newMapping is the index's schema. Words are analysed in English (lower case, stop words,
// stems: "invoices" finds "invoice"); keyword fields are matched whole; no field is stored
// (no subject, name or body is kept in the index as text: snippets are cut at search time from
// the TextSource, at the positions the index recorded); the order key sorts. storeText keeps
// subject, name and body as stored fields (for an index without a TextSource, whose snippets
// bleve highlights from them).
func newMapping(storeText bool) mapping.IndexMapping {
	m := bleve.NewIndexMapping()
	m.DefaultAnalyzer = en.AnalyzerName
	doc := bleve.NewDocumentStaticMapping()
	for _, f := range textFields {
		fm := bleve.NewTextFieldMapping()
		fm.Analyzer = en.AnalyzerName
		fm.IncludeInAll, fm.DocValues = false, false
		fm.Store = storeText && (f == "subject" || f == "body" || f == "name") // else only the terms and their positions
		doc.AddFieldMappingsAt(f, fm)
	}
	for _, f := range keywordFields {
		fm := bleve.NewKeywordFieldMapping()
		fm.Analyzer = keyword.Name
		fm.IncludeInAll, fm.DocValues, fm.Store, fm.IncludeTermVectors = false, false, false, false
		doc.AddFieldMappingsAt(f, fm)
	}
	date := bleve.NewDateTimeFieldMapping()
	date.IncludeInAll, date.Store, date.DocValues = false, false, false
	doc.AddFieldMappingsAt("date", date)
	// Results are sorted on one keyword term per document (see orderKey): sorting on the date
	// field would read its doc values, all of its precision terms, for every match.
	order := bleve.NewKeywordFieldMapping()
	order.Analyzer = keyword.Name
	order.IncludeInAll, order.Store, order.IncludeTermVectors = false, false, false
	doc.AddFieldMappingsAt("order", order)
	// No _all field: unfielded words are expanded to every text field (so hits can say which
	// matched), and the composite would only cost indexing time and space.
	doc.AddSubDocumentMapping("_all", bleve.NewDocumentDisabledMapping())
	m.DefaultMapping = doc
	m.StoreDynamic, m.IndexDynamic, m.DocValuesDynamic = false, false, false
	return m
}

// fields is a document as the mapping indexes it.
func (d *Doc) fields() map[string]any {
	return map[string]any{
		"subject": d.Subject, "from": d.From, "to": d.To, "cc": d.Cc, "name": d.Name, "body": clip(d.Body, MaxBodyBytes),
		"type": d.Type, "mime_type": mediaType(d.MIMEType), "provider": d.Provider, "source_id": d.SourceID, "state": d.State,
		"date": d.Date.UTC(), "order": orderKey(d),
	}
}

// orderKey sorts documents newest first, then by id (descending), as one ascending string:
// the date's complement in fixed-width hex, then the id's bytes complemented.
func orderKey(d *Doc) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%016x", uint64(math.MaxInt64-d.Date.UnixNano()))
	for i := 0; i < len(d.ID); i++ {
		fmt.Fprintf(&b, "%02x", 0xff-d.ID[i])
	}
	return b.String()
}

// mediaType is a MIME type without its parameters, in lower case.
func mediaType(s string) string {
	if t, _, err := mime.ParseMediaType(s); err == nil {
		return t
	}
	t, _, _ := strings.Cut(s, ";")
	return strings.ToLower(strings.TrimSpace(t))
}

// clip cuts s to at most n bytes at a UTF-8 boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Put adds or replaces documents in a tenant's index, in one batch.
func (x *Index) Put(ctx context.Context, tenant string, docs ...Doc) error {
	return x.apply(ctx, tenant, func(b *bleve.Batch) {
		for i := range docs {
			b.Index(docs[i].ID, docs[i].fields())
		}
	})
}

// Remove deletes documents from a tenant's index; ids it does not hold are ignored.
func (x *Index) Remove(ctx context.Context, tenant string, ids ...string) error {
	if !x.Exists(tenant) {
		return nil // nothing to remove from, and no index to create for it
	}
	return x.apply(ctx, tenant, func(b *bleve.Batch) {
		for _, id := range ids {
			b.Delete(id)
		}
	})
}

func (x *Index) apply(ctx context.Context, tenant string, op func(*bleve.Batch)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t, err := x.tenant(tenant)
	if err != nil {
		return err
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	b := t.idx.NewBatch()
	op(b)
	if err := t.idx.Batch(b); err != nil {
		return fmt.Errorf("update search index: %w", err)
	}
	t.pmu.Lock()
	if t.pending != nil {
		*t.pending = append(*t.pending, op)
	}
	t.pmu.Unlock()
	return nil
}

// StoresText reports whether a tenant's index keeps text as stored fields (subject, name or
// body): an index made before the index stopped storing them (or opened without a
// TextSource). With a TextSource such an index still answers, with snippets from the source,
// but its files keep the text until it is rebuilt (Rebuild): the server rebuilds the tenants
// for which this is true.
func (x *Index) StoresText(tenant string) (bool, error) {
	t, err := x.tenant(tenant)
	if err != nil {
		return false, err
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	im, ok := t.idx.Mapping().(*mapping.IndexMappingImpl)
	if !ok || im.DefaultMapping == nil {
		return false, nil
	}
	for _, f := range textFields {
		if dm := im.DefaultMapping.Properties[f]; dm != nil {
			for _, fm := range dm.Fields {
				if fm.Store {
					return true, nil
				}
			}
		}
	}
	return false, nil
}

// Count returns how many documents a tenant's index holds.
func (x *Index) Count(tenant string) (uint64, error) {
	t, err := x.tenant(tenant)
	if err != nil {
		return 0, err
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.idx.DocCount()
}

// Size returns the bytes a tenant's index takes on disk.
func (x *Index) Size(tenant string) (int64, error) {
	var n int64
	err := filepath.WalkDir(x.path(tenant), func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	return n, err
}

// RebuildBatch is how many documents a rebuild indexes per batch.
const RebuildBatch = 4096

// Rebuild replaces a tenant's index with one made from docs (every object that should be
// searchable), built aside and swapped in; searches and updates go on meanwhile, and updates
// made during the rebuild are carried into the new index. progress, if not nil, is called
// after each batch with the documents indexed so far. It returns how many were indexed.
func (x *Index) Rebuild(ctx context.Context, tenant string, docs func(yield func(Doc, error) bool), progress func(int)) (int, error) {
	t, err := x.tenant(tenant)
	if err != nil {
		return 0, err
	}
	t.pmu.Lock()
	if t.pending != nil {
		t.pmu.Unlock()
		return 0, fmt.Errorf("rebuild search index: a rebuild of this tenant is already running")
	}
	t.pending = &[]func(*bleve.Batch){}
	t.pmu.Unlock()
	defer func() {
		t.pmu.Lock()
		t.pending = nil
		t.pmu.Unlock()
	}()

	tmp := t.dir + ".rebuild-" + randomSuffix()
	idx, err := bleve.New(tmp, newMapping(x.storesText()))
	if err != nil {
		return 0, fmt.Errorf("rebuild search index: %w", err)
	}
	n, err := fill(ctx, idx, docs, progress)
	if err != nil {
		idx.Close()
		os.RemoveAll(tmp)
		return n, fmt.Errorf("rebuild search index: %w", err)
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	t.pmu.Lock()
	pending := *t.pending
	t.pmu.Unlock()
	for _, op := range pending {
		b := idx.NewBatch()
		op(b)
		if err := idx.Batch(b); err != nil {
			idx.Close()
			os.RemoveAll(tmp)
			return n, fmt.Errorf("rebuild search index: replay: %w", err)
		}
	}
	// An open scorch index cannot move: both are closed, renamed, and the new one reopened.
	if err := errors.Join(idx.Close(), t.idx.Close()); err != nil {
		return n, fmt.Errorf("rebuild search index: %w", err)
	}
	old := t.dir + ".old-" + randomSuffix()
	if err := os.Rename(t.dir, old); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.idx, _ = openOrCreate(t.dir, x.storesText())
		return n, fmt.Errorf("rebuild search index: %w", err)
	}
	if err := os.Rename(tmp, t.dir); err != nil {
		os.Rename(old, t.dir)
		t.idx, _ = openOrCreate(t.dir, x.storesText())
		return n, fmt.Errorf("rebuild search index: %w", err)
	}
	os.RemoveAll(old)
	if t.idx, err = openOrCreate(t.dir, x.storesText()); err != nil {
		return n, err
	}
	return n, nil
}

// fill indexes docs into idx in batches.
func fill(ctx context.Context, idx bleve.Index, docs func(yield func(Doc, error) bool), progress func(int)) (int, error) {
	n := 0
	b := idx.NewBatch()
	flush := func() error {
		if b.Size() == 0 {
			return nil
		}
		if err := idx.Batch(b); err != nil {
			return err
		}
		b.Reset()
		if progress != nil {
			progress(n)
		}
		return nil
	}
	var failed error
	docs(func(d Doc, err error) bool {
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			failed = err
			return false
		}
		b.Index(d.ID, d.fields())
		n++
		if b.Size() >= RebuildBatch {
			failed = flush()
		}
		return failed == nil
	})
	if failed != nil {
		return n, failed
	}
	return n, flush()
}

func randomSuffix() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
