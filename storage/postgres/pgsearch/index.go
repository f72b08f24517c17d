package pgsearch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"svc.dev/svc/vault/search"
)

// Index is the vault's search index in PostgreSQL. It is safe for concurrent use, by any
// number of processes on the same database.
type Index struct {
	pool *pgxpool.Pool
	text search.TextSource
	// slots bounds the queries this process runs at once (half its cores, at least one), as
	// the bleve index does: searches leave cores to every other request.
	slots  chan struct{}
	closed atomic.Bool
}

// New returns the index in the database behind pool, whose schema storage/postgres's
// migrations made. opts.Text gives the text snippets are cut from (without it, hits have no
// snippet: the index keeps no text).
func New(pool *pgxpool.Pool, opts *search.Options) *Index {
	x := &Index{pool: pool, slots: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2))}
	if opts != nil {
		x.text = opts.Text
	}
	return x
}

// Close stops the index's use; the pool stays its owner's.
func (x *Index) Close() error {
	x.closed.Store(true)
	return nil
}

func (x *Index) check(ctx context.Context) error {
	if x.closed.Load() {
		return search.ErrClosed
	}
	return ctx.Err()
}

// timeout bounds the index's own bookkeeping (Exists, Count, Size, which take no context).
const timeout = 30 * time.Second

// upsert writes one document. Its text fields are analysed here, in English, as bleve's
// are; $15 is the stamp below which a row is replaced (a rebuild's start; math.MaxInt64
// for an update).
const upsert = `
INSERT INTO search_docs (tenant, id, order_key, date, type, mime_type, provider, source_id, state,
    f_subject, f_from, f_to, f_cc, f_name, f_body, words, stamp)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, s, f, t, c, n, b, s || f || t || c || n || b, nextval('search_stamp')
FROM (SELECT to_tsvector('english', $10) s, to_tsvector('english', $11) f, to_tsvector('english', $12) t,
    to_tsvector('english', $13) c, to_tsvector('english', $14) n, to_tsvector('english', $16) b) v
ON CONFLICT (tenant, id) DO UPDATE SET order_key = EXCLUDED.order_key, date = EXCLUDED.date,
    type = EXCLUDED.type, mime_type = EXCLUDED.mime_type, provider = EXCLUDED.provider,
    source_id = EXCLUDED.source_id, state = EXCLUDED.state, f_subject = EXCLUDED.f_subject,
    f_from = EXCLUDED.f_from, f_to = EXCLUDED.f_to, f_cc = EXCLUDED.f_cc, f_name = EXCLUDED.f_name,
    f_body = EXCLUDED.f_body, words = EXCLUDED.words, stamp = EXCLUDED.stamp
WHERE search_docs.stamp < $15`

func queuePut(b *pgx.Batch, tenant string, below int64, docs []search.Doc) {
	b.Queue("INSERT INTO search_tenants (tenant) VALUES ($1) ON CONFLICT DO NOTHING", tenant)
	for _, d := range docs {
		d = d.Normalized()
		b.Queue(upsert, tenant, d.ID, d.OrderKey(), d.Date, d.Type, d.MIMEType, d.Provider, d.SourceID, d.State,
			normalize(d.Subject), normalize(d.From), normalize(d.To), normalize(d.Cc), normalize(d.Name), below,
			normalize(d.Body))
	}
}

func queueRemove(b *pgx.Batch, tenant string, ids []string) {
	b.Queue("DELETE FROM search_docs WHERE tenant = $1 AND id = ANY($2)", tenant, ids)
}

// sendBatch runs a batch in tx and reads every result.
func sendBatch(ctx context.Context, tx pgx.Tx, b *pgx.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, b).Close()
}

// Put adds or replaces documents in a tenant's index, in one transaction.
func (x *Index) Put(ctx context.Context, tenant string, docs ...search.Doc) error {
	if err := x.check(ctx); err != nil {
		return err
	}
	b := &pgx.Batch{}
	queuePut(b, tenant, math.MaxInt64, docs)
	if err := pgx.BeginFunc(ctx, x.pool, func(tx pgx.Tx) error { return sendBatch(ctx, tx, b) }); err != nil {
		return fmt.Errorf("update search index: %w", err)
	}
	return nil
}

// Remove deletes documents from a tenant's index; ids it does not hold are ignored.
func (x *Index) Remove(ctx context.Context, tenant string, ids ...string) error {
	if err := x.check(ctx); err != nil {
		return err
	}
	if _, err := x.pool.Exec(ctx, "DELETE FROM search_docs WHERE tenant = $1 AND id = ANY($2)", tenant, ids); err != nil {
		return fmt.Errorf("update search index: %w", err)
	}
	return nil
}

// Exists reports whether a tenant has an index (an empty one counts).
func (x *Index) Exists(tenant string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var ok bool
	err := x.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM search_tenants WHERE tenant = $1)", tenant).Scan(&ok)
	return err == nil && ok
}

// Count returns how many documents a tenant's index holds.
func (x *Index) Count(tenant string) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var n int64
	if err := x.pool.QueryRow(ctx, "SELECT count(*) FROM search_docs WHERE tenant = $1", tenant).Scan(&n); err != nil {
		return 0, fmt.Errorf("count search index: %w", err)
	}
	return uint64(n), nil
}

// Size returns the bytes a tenant's rows take (their columns, without the indexes' pages).
func (x *Index) Size(tenant string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var n int64
	err := x.pool.QueryRow(ctx, "SELECT coalesce(sum(pg_column_size(d.*)), 0) FROM search_docs d WHERE tenant = $1", tenant).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("size of search index: %w", err)
	}
	return n, nil
}

// StoresText reports whether a tenant's index keeps text: never (only lexemes and their
// positions); it is there so that the index answers what the bleve index answers.
func (x *Index) StoresText(string) (bool, error) { return false, nil }

// Drop removes a tenant's index (the tenant's account was erased).
func (x *Index) Drop(tenant string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := pgx.BeginFunc(ctx, x.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue("DELETE FROM search_docs WHERE tenant = $1", tenant)
		b.Queue("DELETE FROM search_tenants WHERE tenant = $1", tenant)
		return sendBatch(ctx, tx, b)
	})
	if err != nil {
		return fmt.Errorf("drop search index: %w", err)
	}
	return nil
}

// rebuildBatch is how many documents a rebuild writes per transaction.
const rebuildBatch = 512

// Rebuild replaces a tenant's index with one made from docs (every object that should be
// searchable). Searches and updates go on meanwhile: each document is written over the old
// one (unless an update wrote it since the rebuild began), and once every document is
// written, the rows the rebuild did not write, nor an update since it began, are deleted.
// A rebuild that fails leaves the index as it was, but for the documents already rewritten.
// One rebuild of a tenant runs at a time across processes (an advisory lock). progress, if
// not nil, is called after each batch with the documents indexed so far.
func (x *Index) Rebuild(ctx context.Context, tenant string, docs func(yield func(search.Doc, error) bool), progress func(int)) (int, error) {
	if err := x.check(ctx); err != nil {
		return 0, err
	}
	conn, err := x.pool.Acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("rebuild search index: %w", err)
	}
	defer conn.Release()
	lock := "svc.search.rebuild:" + tenant
	var got bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock(hashtextextended($1, 0))", lock).Scan(&got); err != nil {
		return 0, fmt.Errorf("rebuild search index: %w", err)
	}
	if !got {
		return 0, fmt.Errorf("rebuild search index: a rebuild of this tenant is already running")
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(hashtextextended($1, 0))", lock)

	var start int64
	if err := conn.QueryRow(ctx, "SELECT nextval('search_stamp')").Scan(&start); err != nil {
		return 0, fmt.Errorf("rebuild search index: %w", err)
	}
	n, pending := 0, []search.Doc{}
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		b := &pgx.Batch{}
		queuePut(b, tenant, start, pending)
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return sendBatch(ctx, tx, b) }); err != nil {
			return err
		}
		pending = pending[:0]
		if progress != nil {
			progress(n)
		}
		return nil
	}
	var failed error
	docs(func(d search.Doc, err error) bool {
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			failed = err
			return false
		}
		pending = append(pending, d)
		n++
		if len(pending) >= rebuildBatch {
			failed = flush()
		}
		return failed == nil
	})
	if failed == nil {
		failed = flush()
	}
	if failed != nil {
		return n, fmt.Errorf("rebuild search index: %w", failed)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO search_tenants (tenant) VALUES ($1) ON CONFLICT DO NOTHING", tenant); err != nil {
		return n, fmt.Errorf("rebuild search index: %w", err)
	}
	if _, err := conn.Exec(ctx, "DELETE FROM search_docs WHERE tenant = $1 AND stamp < $2", tenant, start); err != nil {
		return n, fmt.Errorf("rebuild search index: %w", err)
	}
	// A rebuild changes many rows at once: the planner's statistics and the GIN index's
	// pending entries are brought up to date now rather than by autovacuum later.
	for _, sql := range []string{cleanPending, "ANALYZE search_docs"} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return n, fmt.Errorf("rebuild search index: %w", err)
		}
	}
	return n, nil
}

// cleanPending moves the GIN index's pending entries (fastupdate: inserts are appended to a
// list that every search must read through) into the index proper, after a batch of
// documents: the batch's insertions stay cheap, and searches do not read a long list.
const cleanPending = "SELECT gin_clean_pending_list('search_docs_words'::regclass)"

// Position returns how far the index has applied the vault's change feed: every entry up to
// this sequence number, in every process on the database.
func (x *Index) Position(ctx context.Context) (uint64, error) {
	var last int64
	if err := x.pool.QueryRow(ctx, "SELECT last FROM search_feed").Scan(&last); err != nil {
		return 0, fmt.Errorf("search index position: %w", err)
	}
	return uint64(last), nil
}

// ErrNoProgress is returned by a Follow function that has nothing to apply; Follow then
// changes nothing and returns the position as it was.
var ErrNoProgress = errors.New("pgsearch: nothing to apply")

// Follow applies the next batch of the vault's change feed. Holding the position's row
// locked (another process's Follow waits), it calls next with the position; next reads the
// feed after it and returns the changes to apply and the sequence number they reach. The
// changes and the new position are committed in one transaction, so that no entry is applied
// by two processes at once or out of order, and the position never runs ahead of the index.
// It returns the position after the call.
func (x *Index) Follow(ctx context.Context, next func(ctx context.Context, after uint64) (search.Changes, uint64, error)) (uint64, error) {
	if err := x.check(ctx); err != nil {
		return 0, err
	}
	var pos uint64
	err := pgx.BeginFunc(ctx, x.pool, func(tx pgx.Tx) error {
		var last int64
		if err := tx.QueryRow(ctx, "SELECT last FROM search_feed FOR UPDATE").Scan(&last); err != nil {
			return err
		}
		pos = uint64(last)
		ch, upTo, err := next(ctx, pos)
		if err != nil {
			return err
		}
		if upTo <= pos {
			return ErrNoProgress
		}
		b := &pgx.Batch{}
		for tenant, docs := range ch.Put {
			queuePut(b, tenant, math.MaxInt64, docs)
		}
		for tenant, ids := range ch.Remove {
			queueRemove(b, tenant, ids)
		}
		b.Queue("UPDATE search_feed SET last = $1", int64(upTo))
		if len(ch.Put) > 0 {
			b.Queue(cleanPending)
		}
		if err := sendBatch(ctx, tx, b); err != nil {
			return err
		}
		pos = upTo
		return nil
	})
	switch {
	case errors.Is(err, ErrNoProgress):
		return pos, nil
	case err != nil:
		return pos, fmt.Errorf("follow the vault change feed: %w", err)
	}
	return pos, nil
}

// normalize is text as the index analyses it: the characters PostgreSQL's parser reads as
// markup or joins into one token where bleve's splits words (<tags>, &entities;,
// user@host, /paths) are blanks, and so are NUL, the snippet markers and bytes that are not
// UTF-8. Every byte keeps its offset, so a passage of the normalized text is the same
// passage of the original.
func normalize(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			b[i] = ' '
			i++
			continue
		}
		switch r {
		case '<', '>', '@', '&', '/', 0, markOpen, markClose:
			b[i] = ' '
		}
		i += n
	}
	return string(b)
}
