package platform

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// IdempotencyWindow is how long a completed response is replayed for its key.
const IdempotencyWindow = 24 * time.Hour

// IdempotencyRecord is what is kept under one Idempotency-Key.
type IdempotencyRecord struct {
	Endpoint    string      `json:"endpoint"`
	RequestHash string      `json:"request_hash"`
	Done        bool        `json:"done"`
	Status      int         `json:"status,omitempty"`
	Header      http.Header `json:"header,omitempty"`
	Body        []byte      `json:"body,omitempty"` // the response, as the edge encodes it for storage
	CreatedAt   time.Time   `json:"created_at"`
}

// IdempotencyStore keeps idempotency records. Claim must be atomic: of any number of
// concurrent claims of one key, exactly one succeeds.
type IdempotencyStore interface {
	// ClaimIdempotency stores rec under key unless a record created at or after notBefore is
	// there that is done or was created at or after unfinishedBefore (an unfinished record
	// older than that was abandoned: the process that claimed it died); it returns that record
	// (and stores nothing) or nil when rec was stored.
	ClaimIdempotency(ctx context.Context, key string, rec *IdempotencyRecord, notBefore, unfinishedBefore time.Time) (*IdempotencyRecord, error)
	// FinishIdempotency replaces the record under key.
	FinishIdempotency(ctx context.Context, key string, rec *IdempotencyRecord) error
	// ReleaseIdempotency deletes the record under key.
	ReleaseIdempotency(ctx context.Context, key string) error
	// PurgeIdempotency deletes records created before before, and every unfinished record when
	// unfinished is true (at start-up nothing is in flight any more).
	PurgeIdempotency(ctx context.Context, before time.Time, unfinished bool) (int, error)
}

// IdempotencyOutcome is what to do with a request that carries an Idempotency-Key.
type IdempotencyOutcome int

// The outcomes of Idempotency.Begin.
const (
	// IdempotencyProceed: the key is new (or expired); run the request, then Finish or Release.
	IdempotencyProceed IdempotencyOutcome = iota
	// IdempotencyReplay: the same request already completed; answer with the stored record.
	IdempotencyReplay
	// IdempotencyReused: the key was used for another endpoint or body (409 idempotency_key_reused).
	IdempotencyReused
	// IdempotencyInUse: the same key is still being processed (409 idempotency_key_in_use).
	IdempotencyInUse
)

// DefaultIdempotencyInFlight is how long a request may hold its key unfinished before the key
// counts as abandoned (NewIdempotency's default; see Idempotency.AbandonAfter).
const DefaultIdempotencyInFlight = 10 * time.Minute

// Idempotency implements Idempotency-Key semantics: key + principal + endpoint + request hash,
// replayed for IdempotencyWindow.
type Idempotency struct {
	store    IdempotencyStore
	now      func() time.Time
	inFlight time.Duration
}

// NewIdempotency returns the idempotency service over s; now defaults to time.Now.
func NewIdempotency(s IdempotencyStore, now func() time.Time) *Idempotency {
	if now == nil {
		now = time.Now
	}
	return &Idempotency{store: s, now: now, inFlight: DefaultIdempotencyInFlight}
}

// AbandonAfter sets how long a key may stay claimed by a request that has not finished before
// another request with it may claim it again (default DefaultIdempotencyInFlight), and returns
// i. A process that dies with requests in flight leaves their keys claimed; one process
// releases its own at its next start, but in a cluster the other replicas go on, and would
// answer idempotency_key_in_use for the whole IdempotencyWindow. d must be well over the
// longest a request runs (the server's request deadline), or a request still running could
// be run twice.
func (i *Idempotency) AbandonAfter(d time.Duration) *Idempotency {
	i.inFlight = d
	return i
}

// Key is the storage key of an Idempotency-Key header value for one principal.
func (i *Idempotency) Key(principal, headerValue string) string {
	return principal + "\x00" + headerValue
}

// Begin claims key for a request to endpoint whose canonical bytes hash to requestHash.
func (i *Idempotency) Begin(ctx context.Context, key, endpoint, requestHash string) (IdempotencyOutcome, *IdempotencyRecord, error) {
	now := i.now().UTC()
	rec := &IdempotencyRecord{Endpoint: endpoint, RequestHash: requestHash, CreatedAt: now}
	prev, err := i.store.ClaimIdempotency(ctx, key, rec, now.Add(-IdempotencyWindow), now.Add(-i.inFlight))
	if err != nil {
		return 0, nil, fmt.Errorf("claim idempotency key: %w", err)
	}
	switch {
	case prev == nil:
		return IdempotencyProceed, rec, nil
	case prev.Endpoint != endpoint || prev.RequestHash != requestHash:
		return IdempotencyReused, prev, nil
	case !prev.Done:
		return IdempotencyInUse, prev, nil
	}
	return IdempotencyReplay, prev, nil
}

// Finish stores the response of a request begun with IdempotencyProceed.
func (i *Idempotency) Finish(ctx context.Context, key string, rec *IdempotencyRecord, status int, header http.Header, body []byte) error {
	done := *rec
	done.Done, done.Status, done.Header, done.Body = true, status, header, body
	return i.store.FinishIdempotency(ctx, key, &done)
}

// Release forgets a key whose request failed in a way that must not be replayed (a server
// error), so the client may retry with it.
func (i *Idempotency) Release(ctx context.Context, key string) error {
	return i.store.ReleaseIdempotency(ctx, key)
}

// Purge drops expired records; with unfinished, also the records of requests that were in
// flight when the process stopped.
func (i *Idempotency) Purge(ctx context.Context, unfinished bool) (int, error) {
	return i.store.PurgeIdempotency(ctx, i.now().UTC().Add(-IdempotencyWindow), unfinished)
}
