package webhook

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"svc.dev/svc/platform"
)

// storeRetry is how long a webhook's work waits after a store error before it is tried again.
const storeRetry = 5 * time.Second

// lane is a webhook's in-memory delivery state: the deliveries waiting for their next
// attempt, whether its queue may hold events, and its requests in flight. Guarded by
// Engine.mu.
type lane struct {
	id       string
	status   Status
	due      dueHeap
	queued   bool      // the store may hold queued events for this webhook
	gen      uint64    // bumped by every Publish to this webhook
	forming  bool      // a batch is being taken from the queue
	inflight int       // jobs running for this webhook
	hold     time.Time // no new batch before this (after a store error)
	owned    bool      // this engine delivers for the webhook (it holds its lease, or has no Leases)
	lease    Lease     // the webhook's lease, with Leases
}

type dueItem struct {
	at time.Time
	id string
}

type dueHeap []dueItem

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueItem)) }
func (h *dueHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

func (l *lane) push(at time.Time, deliveryID string) { heap.Push(&l.due, dueItem{at, deliveryID}) }

// startDue starts every job due at now that the concurrency bounds allow, taking one job per
// webhook per round so that webhooks share MaxInFlight fairly. It returns how many it started
// and the earliest later time at which something becomes due (zero if none is known; jobs
// that end wake the engine anyway).
func (e *Engine) startDue(ctx context.Context, wg *sync.WaitGroup) (started int, next time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	for progress := true; progress && e.inflight < e.opts.MaxInFlight; {
		progress = false
		for _, l := range e.lanes {
			if e.inflight >= e.opts.MaxInFlight {
				break
			}
			if l.status != StatusActive || l.inflight >= e.opts.PerWebhook || !l.owned {
				continue
			}
			switch {
			case len(l.due) > 0 && !l.due[0].at.After(now):
				it := heap.Pop(&l.due).(dueItem)
				e.start(ctx, wg, l, func(ctx context.Context) { e.retry(ctx, l, it) })
			case l.queued && !l.forming && !now.Before(l.hold):
				l.forming = true
				e.start(ctx, wg, l, func(ctx context.Context) { e.batch(ctx, l, now) })
			default:
				continue
			}
			started++
			progress = true
		}
	}
	for _, l := range e.lanes {
		if l.status != StatusActive || l.inflight >= e.opts.PerWebhook || !l.owned {
			continue
		}
		if len(l.due) > 0 && l.due[0].at.After(now) && (next.IsZero() || l.due[0].at.Before(next)) {
			next = l.due[0].at
		}
		if l.queued && !l.forming && l.hold.After(now) && (next.IsZero() || l.hold.Before(next)) {
			next = l.hold
		}
	}
	return started, next
}

// start runs a job for lane l; e.mu is held.
func (e *Engine) start(ctx context.Context, wg *sync.WaitGroup, l *lane, job func(context.Context)) {
	l.inflight++
	e.inflight++
	wg.Add(1)
	go func() {
		defer wg.Done()
		job(ctx)
		e.mu.Lock()
		l.inflight--
		e.inflight--
		e.mu.Unlock()
		e.signal()
	}()
}

// batch takes up to MaxBatch events from the webhook's queue into a new delivery, then makes
// its first attempt.
func (e *Engine) batch(ctx context.Context, l *lane, now time.Time) {
	e.mu.Lock()
	gen := l.gen
	e.mu.Unlock()
	done := func(drained bool, failed bool) {
		e.mu.Lock()
		l.forming = false
		if drained && l.gen == gen {
			l.queued = false // no Publish since we looked: the queue is empty
		}
		if failed {
			l.hold = now.Add(storeRetry)
		}
		e.mu.Unlock()
	}
	qs, err := e.store.Queued(ctx, l.id, MaxBatch)
	if err != nil {
		e.opts.Logger.Error("webhook queue", "webhook_id", l.id, "err", err)
		done(false, true)
		return
	}
	n, size := 0, 2
	for _, q := range qs {
		if n > 0 && size+len(q.Event)+1 > MaxBatchBytes {
			break
		}
		size += len(q.Event) + 1
		n++
	}
	if n == 0 {
		done(true, false)
		return
	}
	ids := make([]string, n)
	events := make([]json.RawMessage, n)
	for i, q := range qs[:n] {
		ids[i], events[i] = q.EventID, q.Event
	}
	d := newDelivery(l.id, ids, events, e.now())
	if err := e.store.CreateDelivery(ctx, d); err != nil {
		if !errors.Is(err, platform.ErrNotFound) {
			e.opts.Logger.Error("webhook delivery", "webhook_id", l.id, "err", err)
		}
		done(false, true)
		return
	}
	done(n == len(qs) && len(qs) < MaxBatch, false)
	e.attempt(ctx, l, d, d.CreatedAt)
}

// retry makes the next attempt of a waiting delivery.
func (e *Engine) retry(ctx context.Context, l *lane, it dueItem) {
	d, err := e.store.Delivery(ctx, it.id)
	if errors.Is(err, platform.ErrNotFound) {
		return
	}
	if err != nil {
		e.opts.Logger.Error("webhook delivery", "delivery_id", it.id, "err", err)
		e.requeue(l, e.now().Add(storeRetry), it.id)
		return
	}
	if d.Status.Final() {
		return
	}
	e.attempt(ctx, l, d, it.at)
}

func (e *Engine) requeue(l *lane, at time.Time, deliveryID string) {
	e.mu.Lock()
	l.push(at, deliveryID)
	e.mu.Unlock()
}

// attempt sends a delivery once and records the outcome. due is when the attempt was due; a
// delivery that cannot be attempted now goes back to wait at that time.
func (e *Engine) attempt(ctx context.Context, l *lane, d *Delivery, due time.Time) {
	ep, err := e.store.Webhook(ctx, d.WebhookID)
	if errors.Is(err, platform.ErrNotFound) {
		return
	}
	if err != nil {
		e.opts.Logger.Error("webhook", "webhook_id", d.WebhookID, "err", err)
		e.requeue(l, e.now().Add(storeRetry), d.ID)
		return
	}
	if ep.Status != StatusActive {
		e.mu.Lock()
		l.status = ep.Status
		l.push(due, d.ID)
		e.mu.Unlock()
		return
	}
	start := e.now()
	secrets, err := e.signingSecrets(ep, start)
	if err != nil {
		// The service's fault (wrong sealing key): do not spend the receiver's retries.
		e.opts.Logger.Error("webhook signing", "webhook_id", ep.ID, "err", err)
		e.requeue(l, start.Add(time.Minute), d.ID)
		return
	}
	began := time.Now()
	status, failure := e.send(ctx, ep, d, secrets, start)
	if ctx.Err() != nil {
		// Shutting down: this attempt does not count; it is made again after the restart.
		e.requeue(l, due, d.ID)
		return
	}
	e.attempts.Add(1)
	at := start.Truncate(time.Millisecond)
	d.Attempts = append(d.Attempts, Attempt{At: at, ResponseStatus: status, Error: failure,
		DurationMillis: time.Since(began).Milliseconds()})
	d.LastResponseStatus, d.LastError = status, failure
	d.UpdatedAt = e.now().Truncate(time.Millisecond)
	if failure == "" {
		d.Status, d.NextAttemptAt = DeliverySucceeded, nil
	} else if next, ok := NextAttempt(d.Attempts[0].At, at, len(d.Attempts)); ok {
		d.Status, d.NextAttemptAt = DeliveryFailed, &next
	} else {
		d.Status, d.NextAttemptAt = DeliveryDead, nil
	}
	wctx := context.WithoutCancel(ctx)
	if err := e.store.UpdateDelivery(wctx, d); err != nil {
		if !errors.Is(err, platform.ErrNotFound) {
			// The stored delivery still says it is due: it is sent again after a restart.
			e.opts.Logger.Error("webhook delivery", "delivery_id", d.ID, "err", err)
		}
		if d.Status == DeliveryFailed {
			e.requeue(l, *d.NextAttemptAt, d.ID)
		}
		return
	}
	switch d.Status {
	case DeliveryFailed:
		e.requeue(l, *d.NextAttemptAt, d.ID)
	case DeliverySucceeded, DeliveryDead:
		if e.opts.OnFinal != nil {
			e.opts.OnFinal(ep, d)
		}
		if d.Status == DeliveryDead {
			e.maybeDisable(wctx, l, ep, d)
		}
	}
}

// send POSTs the delivery's body and returns the response status and, unless the receiver
// acknowledged with a 2xx in time, why the attempt failed.
func (e *Engine) send(ctx context.Context, ep *Endpoint, d *Delivery, secrets []string, at time.Time) (int, string) {
	body := make([]byte, 0, 2+len(d.Events)*512)
	body = append(body, '[')
	for i, ev := range d.Events {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, ev...)
	}
	body = append(body, ']')

	actx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		return 0, "bad request: " + err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "svc-webhooks/1")
	req.Header.Set(HeaderSignature, Sign(at, body, secrets...))
	req.Header.Set(HeaderWebhookID, ep.ID)
	req.Header.Set(HeaderDeliveryID, d.ID)
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, describe(err, e.opts.Timeout)
	}
	// Drain a little so the connection can be reused; the answer's content is not used.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return resp.StatusCode, ""
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return resp.StatusCode, "HTTP " + strconv.Itoa(resp.StatusCode) + ": redirects are not followed"
	default:
		return resp.StatusCode, "HTTP " + strconv.Itoa(resp.StatusCode)
	}
}

// describe turns a transport error into what a developer can act on, without the request
// line that net/http prefixes.
func describe(err error, timeout time.Duration) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("timeout: no response within %s", timeout)
	case errors.Is(err, ErrBlockedAddress):
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "refused: " + err.Error()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// maybeDisable disables a webhook whose delivery died if nothing was delivered to it since
// that delivery's first attempt: it has been failing for the whole retry span.
func (e *Engine) maybeDisable(ctx context.Context, l *lane, ep *Endpoint, dead *Delivery) {
	if e.opts.KeepFailing || len(dead.Attempts) == 0 {
		return
	}
	first := dead.Attempts[0].At
	recent, err := e.store.Deliveries(ctx, ep.ID, "", 100)
	if err != nil {
		e.opts.Logger.Error("webhook deliveries", "webhook_id", ep.ID, "err", err)
		return
	}
	for _, r := range recent {
		if r.Status == DeliverySucceeded && r.UpdatedAt.After(first) {
			return
		}
	}
	now := e.now().Truncate(time.Millisecond)
	errSkip := errors.New("not active")
	updated, err := e.store.UpdateWebhook(ctx, ep.ID, func(w *Endpoint) error {
		if w.Status != StatusActive {
			return errSkip
		}
		w.Status = StatusDisabled
		w.DisabledReason = "deliveries failed for 3 days; last error: " + dead.LastError
		w.UpdatedAt = now
		return nil
	})
	if err != nil {
		if !errors.Is(err, errSkip) && !errors.Is(err, platform.ErrNotFound) {
			e.opts.Logger.Error("disable webhook", "webhook_id", ep.ID, "err", err)
		}
		return
	}
	e.mu.Lock()
	l.status = StatusDisabled
	e.mu.Unlock()
	if e.opts.OnDisabled != nil {
		e.opts.OnDisabled(updated)
	}
}

// maxSleep bounds Run's sleep, so that a changed wall clock is noticed.
const maxSleep = time.Minute

// ErrRunning is returned by Run when the engine is already running.
var ErrRunning = errors.New("webhook engine already running")

// DefaultDeliveryRetention is how long final deliveries are kept: 30 days, ten times the retry
// span, so a receiver's operator can look back over a month.
const DefaultDeliveryRetention = 30 * 24 * time.Hour

// pruneEvery is how often Run prunes old deliveries.
const pruneEvery = time.Hour

// PruneDeliveries removes the succeeded and dead deliveries created more than the retention
// (Options.DeliveryRetention) ago, in batches of 1000, and returns how many it removed. Run
// calls it hourly.
func (e *Engine) PruneDeliveries(ctx context.Context) (int, error) {
	retention := e.opts.DeliveryRetention
	if retention <= 0 {
		retention = DefaultDeliveryRetention
	}
	before := e.now().Add(-retention)
	total := 0
	for {
		n, err := e.store.PruneDeliveries(ctx, before, 1000)
		total += n
		if err != nil || n < 1000 {
			return total, err
		}
	}
}

// Run delivers until ctx is cancelled: it starts every delivery that is due, then sleeps until
// the next one is due, an event is published, or a request ends. Every hour it prunes old
// deliveries (PruneDeliveries). On cancellation, requests in
// flight are abandoned (they are made again by the next Run, which is at least once) and Run
// returns nil after they have stopped.
func (e *Engine) Run(ctx context.Context) error {
	e.mu.Lock()
	if e.running {
		e.mu.Unlock()
		return ErrRunning
	}
	e.running = true
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.running = false
		e.mu.Unlock()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	if e.opts.Leases != nil {
		wg.Go(func() { e.holdLeases(ctx) })
	}
	timer := time.NewTimer(maxSleep)
	defer timer.Stop()
	var pruned time.Time
	for {
		if now := e.now(); now.Sub(pruned) >= pruneEvery {
			pruned = now
			if _, err := e.PruneDeliveries(ctx); err != nil && ctx.Err() == nil {
				e.opts.Logger.Error("prune webhook deliveries", "err", err)
			}
		}
		_, next := e.startDue(ctx, &wg)
		sleep := maxSleep
		if !next.IsZero() {
			sleep = max(0, min(sleep, next.Sub(e.now())))
		}
		timer.Reset(sleep)
		select {
		case <-ctx.Done():
			return nil
		case <-e.wake:
		case <-timer.C:
		}
	}
}

// Tick makes every attempt that is due at the engine's clock now, waits for them, and
// returns how many requests were made. Deliveries that fail are rescheduled for later
// times, so Tick ends; tests advance their clock and Tick again. Use Tick or Run, not both.
func (e *Engine) Tick(ctx context.Context) (int, error) {
	before := e.attempts.Load()
	for {
		var wg sync.WaitGroup
		n, _ := e.startDue(ctx, &wg)
		wg.Wait()
		if n == 0 || ctx.Err() != nil {
			break
		}
	}
	return int(e.attempts.Load() - before), ctx.Err()
}
