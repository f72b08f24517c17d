package svc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/mail"
	"path/filepath"
	"slices"
	"strings"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/storage"
	"svc.dev/svc/vault"
	"svc.dev/svc/vault/search"
)

// SearchQuery is a search of a tenant's vault: Q in the query syntax of docs/search.md
// (words, "phrases", -exclusions, field:value), and filters.
type SearchQuery struct {
	// Q is the query; empty, or one that does not parse, is refused (field "q").
	Q string
	// Provider keeps the objects of one provider (zero: any).
	Provider svcv1.Provider
	// Type is a content kind (message, file, photo, ...), a MIME type, or a family (image/*).
	Type string
	// From (inclusive) and To (exclusive) bound the object's date (a message's Date, else the
	// file's modification time, else when it was committed); zero: unbounded.
	From, To time.Time
	// Sources keeps the objects of these sources only (empty: any).
	Sources []string
	// Limit is the page size: 0 means 50, at most MaxSearchLimit.
	Limit int
	// Cursor continues after the last hit of a page: a previous SearchResult.Next.
	Cursor string
}

// MaxSearchLimit is the largest page a search returns.
const MaxSearchLimit = 200

// SearchHit is a vault object a search found.
type SearchHit struct {
	// Object is the vault object as it is now (committed or cold).
	Object vault.Object
	// Score is the relevance of the object for the query.
	Score float64
	// Matched are the fields the query matched, sorted.
	Matched []string
	// Snippet is a passage of the best matching text field with the matched words in
	// <mark>...</mark>, the rest HTML-escaped; empty when only other fields matched.
	Snippet string
}

// SearchResult is a page of hits, newest first (by date, then id).
type SearchResult struct {
	Hits []SearchHit
	// Next continues the search after this page (SearchQuery.Cursor); empty at the end.
	Next string
}

// maxIndexWait bounds how long a search waits for the index to catch up with the vault.
const maxIndexWait = 5 * time.Second

// SearchVault searches the tenant's vault: the text and metadata of its committed and cold
// objects, newest first. It first waits (up to 5 s) until the index holds every vault change
// made before it was asked, so it finds what was just committed; past that it answers from
// what is indexed. A hit whose object has gone since it was indexed is dropped.
func (s *Scope) SearchVault(ctx context.Context, q SearchQuery) (SearchResult, error) {
	switch {
	case q.Limit < 0 || q.Limit > MaxSearchLimit:
		return SearchResult{}, invalid("limit", fmt.Sprintf("must be 1 to %d", MaxSearchLimit))
	case q.Limit == 0:
		q.Limit = 50
	}
	if !q.From.IsZero() && !q.To.IsZero() && !q.To.After(q.From) {
		return SearchResult{}, invalid("to", "must be after from")
	}
	if s.access.limited() {
		// Only the grant's sources: those asked for among them, or all of them.
		if len(q.Sources) == 0 {
			q.Sources = s.access.Sources
		} else {
			q.Sources = slices.DeleteFunc(slices.Clone(q.Sources), func(id string) bool { return !s.access.allowsSource(id) })
			if len(q.Sources) == 0 {
				return SearchResult{Hits: []SearchHit{}}, nil
			}
		}
	}
	sq := search.Query{Q: q.Q, Type: q.Type, From: q.From, To: q.To, Sources: q.Sources, Limit: q.Limit, After: q.Cursor}
	if q.Provider != svcv1.Provider_PROVIDER_UNSPECIFIED {
		sq.Provider = enumWire(q.Provider)
	}
	ix, tenant := s.c.search, s.key()
	// Read-your-writes, within reason: a worker that is far behind (or stuck) delays a search
	// by at most maxIndexWait, which then answers from what is indexed.
	wait, cancel := context.WithTimeout(ctx, maxIndexWait)
	err := ix.sync(wait)
	cancel()
	if ctx.Err() != nil {
		return SearchResult{}, ctx.Err()
	}
	if err != nil {
		s.c.log.Warn("search: the index is behind the vault", "tenant", tenant, "waited", maxIndexWait)
	}
	res, err := ix.index.Search(ctx, tenant, sq)
	switch {
	case errors.Is(err, search.ErrInvalidPosition):
		return SearchResult{}, invalid("cursor", "is not a search cursor")
	case errors.Is(err, search.ErrInvalidQuery):
		return SearchResult{}, invalid("q", strings.TrimPrefix(err.Error(), search.ErrInvalidQuery.Error()+": "))
	case err != nil:
		return SearchResult{}, fmt.Errorf("search the vault: %w", err)
	}
	out := SearchResult{Hits: []SearchHit{}, Next: res.Next}
	var stale []string
	for _, h := range res.Hits {
		o, err := s.c.vault.Get(ctx, tenant, h.ID)
		if errors.Is(err, vault.ErrNotFound) || err == nil && !searchable(o) {
			stale = append(stale, h.ID) // deleted since it was indexed (by a tool, say)
			continue
		}
		if err != nil {
			return SearchResult{}, err
		}
		if s.reachesVaultObject(o) != nil {
			continue
		}
		out.Hits = append(out.Hits, SearchHit{Object: o, Score: h.Score, Matched: h.Matched, Snippet: h.Snippet})
	}
	if len(stale) > 0 {
		if err := ix.index.Remove(context.WithoutCancel(ctx), tenant, stale...); err != nil {
			s.c.log.Error("search index: remove stale hits", "err", err)
		}
	}
	return out, nil
}

// IndexStats is what a rebuild of a tenant's search index did.
type IndexStats struct {
	// Indexed is how many vault objects the index holds.
	Indexed int
	// IndexBytes is the index's size on disk.
	IndexBytes int64
}

// ReindexVault rebuilds the tenant's search index from its vault: built aside while searches
// use the old one, updates made meanwhile carried over, then swapped in. progress, if not
// nil, is told how many objects were indexed so far out of total (the searchable objects when
// it started; 0 if they could not be counted).
func (s *Scope) ReindexVault(ctx context.Context, progress func(indexed int, total int64)) (IndexStats, error) {
	ix, tenant := s.c.search, s.key()
	total, err := ix.count(ctx, tenant)
	if err != nil {
		s.c.log.Error("reindex: count objects", "tenant", tenant, "err", err)
		total = 0
	}
	var report func(int)
	if progress != nil {
		report = func(n int) { progress(n, total) }
	}
	var st IndexStats
	st.Indexed, err = ix.index.Rebuild(ctx, tenant, ix.docs(ctx, tenant), report)
	st.IndexBytes, _ = ix.index.Size(tenant)
	return st, err
}

// SearchIndexed reports whether the tenant has a search index (a data directory from before
// search, or whose index was removed, has none: ReindexVault makes it).
func (s *Scope) SearchIndexed() bool { return s.c.search.index.Exists(s.key()) }

// SearchIndexStoresText reports whether the tenant's search index was built by an older
// version that kept text in it (subjects, names, bodies, in plaintext): a rebuild
// (ReindexVault) replaces it with one that keeps none.
func (s *Scope) SearchIndexStoresText() bool {
	stores, err := s.c.search.index.StoresText(s.key())
	return err == nil && stores
}

// searchable reports whether an object belongs in the index.
func searchable(o vault.Object) bool {
	return o.State == vault.StateCommitted || o.State == vault.StateCold
}

// doc is what the index holds of a vault object: its metadata, the text extracted at commit,
// and for a message its headers, from its manifest or else from the message itself.
func (ix *vaultIndex) doc(ctx context.Context, tenant string, o vault.Object) (search.Doc, error) {
	d := search.Doc{ID: o.ID, Name: o.Name, Type: o.Kind, MIMEType: o.MIMEType, SourceID: o.SourceID,
		State: enumWire(o.State.Proto()), Date: o.CommittedAt}
	if d.Date.IsZero() {
		d.Date = o.CreatedAt
	}
	if o.Provider != svcv1.Provider_PROVIDER_UNSPECIFIED {
		d.Provider = enumWire(o.Provider)
	}
	if o.AssetID != "" {
		m, err := ix.c.store.Manifests().Get(ctx, tenant, o.AssetID)
		switch {
		case err == nil:
			c := m.GetContent()
			if c.GetKind() != svcv1.ContentKind_CONTENT_KIND_UNSPECIFIED {
				d.Type = enumWire(c.GetKind())
			}
			if t := m.GetSource().GetModifiedAt(); t != nil {
				d.Date = t.AsTime()
			}
			if msg := c.GetMessage(); msg != nil {
				d.Subject, d.From = msg.GetSubject(), msg.GetFrom()
				d.To, d.Cc = strings.Join(msg.GetTo(), ", "), strings.Join(msg.GetCc(), ", ")
				if msg.GetDate() != nil {
					d.Date = msg.GetDate().AsTime()
				}
			}
		case !errors.Is(err, storage.ErrNotFound):
			return d, err
		}
	}
	switch {
	case isMessage(o): // a .eml file is a message too
		d.Type = "message"
	case d.Type == "":
		d.Type = "file"
	}
	if isMessage(o) && d.Subject == "" && d.From == "" {
		if err := ix.headers(ctx, tenant, o, &d); err != nil {
			return d, err
		}
	}
	if o.HasText {
		// Read to its end, so only verified text is indexed (or cut into snippets).
		text, err := ix.c.vault.ReadText(ctx, tenant, o.ID, search.MaxBodyBytes)
		if err != nil {
			return d, fmt.Errorf("text of %s: %w", o.ID, err)
		}
		d.Body = string(text)
	}
	return d, nil
}

func isMessage(o vault.Object) bool {
	mt, _, _ := mime.ParseMediaType(o.MIMEType)
	return o.Kind == "message" || mt == "message/rfc822" || strings.EqualFold(filepath.Ext(o.Name), ".eml")
}

// headers reads a message's headers from its content (the first 64 KiB at most).
func (ix *vaultIndex) headers(ctx context.Context, tenant string, o vault.Object, d *search.Doc) error {
	head, _, err := ix.c.vault.ReadHead(ctx, tenant, o.ID, 64<<10) // verified before it is read
	if err != nil {
		return fmt.Errorf("headers of %s: %w", o.ID, err)
	}
	msg, err := mail.ReadMessage(bufio.NewReader(bytes.NewReader(head)))
	if err != nil {
		return nil // not a parseable message: its text is still indexed
	}
	dec := new(mime.WordDecoder)
	get := func(k string) string {
		v := msg.Header.Get(k)
		if s, err := dec.DecodeHeader(v); err == nil {
			return s
		}
		return v
	}
	d.Subject, d.From, d.To, d.Cc = get("Subject"), get("From"), get("To"), get("Cc")
	if t, err := msg.Header.Date(); err == nil {
		d.Date = t
	}
	return nil
}

// count returns how many objects of a tenant are searchable (for a rebuild's progress).
func (ix *vaultIndex) count(ctx context.Context, tenant string) (int64, error) {
	var n int64
	after := ""
	for {
		page, more, err := ix.c.vault.List(ctx, tenant, after, 1000, searchable)
		if err != nil {
			return n, err
		}
		n += int64(len(page))
		if !more || len(page) == 0 {
			return n, nil
		}
		after = page[len(page)-1].ID
	}
}

// docs yields the search document of every searchable object of a tenant, reading the vault a
// page at a time (no transaction is open while a document is made).
func (ix *vaultIndex) docs(ctx context.Context, tenant string) func(yield func(search.Doc, error) bool) {
	return func(yield func(search.Doc, error) bool) {
		after := ""
		for {
			page, more, err := ix.c.vault.List(ctx, tenant, after, 256, searchable)
			if err != nil {
				yield(search.Doc{}, err)
				return
			}
			for _, o := range page {
				d, err := ix.doc(ctx, tenant, o)
				if !yield(d, err) || err != nil {
					return
				}
				after = o.ID
			}
			if !more || len(page) == 0 {
				return
			}
		}
	}
}
