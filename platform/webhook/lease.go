package webhook

import (
	"context"
	"errors"
	"time"

	"svc.dev/svc/platform"
)

// Leases hand each webhook's deliveries to one engine at a time among engines sharing a
// store (replicas of a service on one database). Only the engine holding a webhook's lease
// forms its deliveries from its queue and attempts them, so each queued event goes into one
// delivery; a delivery in flight when its engine dies is attempted again by the engine that
// takes the lease over (at least once, as after a restart: receivers dedupe by event id).
type Leases = platform.Leases

// Lease is a lease an engine holds.
type Lease = platform.Lease

// ErrTaken is returned (wrapped) by Leases.Take when another engine holds the lease.
var ErrTaken = platform.ErrLeaseTaken

// holdLeases runs beside Run with Leases: every Poll (default 5 s) it renews the leases of
// the webhooks this engine delivers for (dropping those it lost), takes the leases of the
// others that nobody holds, learns of webhooks made on other replicas, and looks again at its
// webhooks' queues (events published on another replica do not wake it). On return it
// releases its leases.
func (e *Engine) holdLeases(ctx context.Context) {
	defer e.releaseLeases()
	poll := e.opts.Poll
	if poll <= 0 {
		poll = 5 * time.Second
	}
	for {
		e.pollLeases(ctx)
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// pollLeases is one round of holdLeases.
func (e *Engine) pollLeases(ctx context.Context) {
	// Webhooks made on other replicas.
	if eps, err := e.store.AllWebhooks(ctx); err == nil {
		e.mu.Lock()
		for _, ep := range eps {
			if l := e.lanes[ep.ID]; l == nil {
				e.lanes[ep.ID] = &lane{id: ep.ID, status: ep.Status, queued: true}
			} else {
				l.status = ep.Status
			}
		}
		e.mu.Unlock()
	} else if ctx.Err() == nil {
		e.opts.Logger.Error("webhook leases: list webhooks", "err", err)
	}
	e.mu.Lock()
	type held struct {
		l     *lane
		lease Lease
	}
	var renew []held
	var take []*lane
	for _, l := range e.lanes {
		switch {
		case l.owned:
			renew = append(renew, held{l, l.lease})
		case l.status == StatusActive:
			take = append(take, l)
		}
	}
	e.mu.Unlock()
	for _, h := range renew {
		if err := h.lease.Renew(ctx); err != nil {
			e.opts.Logger.Warn("webhook lease lost", "webhook_id", h.l.id, "err", err)
			e.mu.Lock()
			h.l.owned, h.l.lease = false, nil
			e.mu.Unlock()
		}
	}
	var gained []*lane
	for _, l := range take {
		lease, err := e.opts.Leases.Take(ctx, "webhook:"+l.id)
		if errors.Is(err, ErrTaken) {
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				e.opts.Logger.Error("webhook lease", "webhook_id", l.id, "err", err)
			}
			continue
		}
		gained = append(gained, l)
		e.mu.Lock()
		l.owned, l.lease = true, lease
		e.mu.Unlock()
	}
	if len(gained) > 0 {
		e.reloadDue(ctx, gained)
	}
	// Events published on other replicas do not wake this engine: look at every owned queue.
	e.mu.Lock()
	for _, l := range e.lanes {
		if l.owned {
			l.queued = true
		}
	}
	e.mu.Unlock()
	e.signal()
}

// reloadDue replaces the waiting deliveries of lanes this engine just took over with the
// store's: the engine that held them before may have made deliveries this one never saw.
func (e *Engine) reloadDue(ctx context.Context, lanes []*lane) {
	ds, err := e.store.ActiveDeliveries(ctx)
	if err != nil {
		if ctx.Err() == nil {
			e.opts.Logger.Error("webhook leases: load deliveries", "err", err)
		}
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	mine := map[string]*lane{}
	for _, l := range lanes {
		l.due = nil
		mine[l.id] = l
	}
	for _, d := range ds {
		if l := mine[d.WebhookID]; l != nil {
			at := d.CreatedAt
			if d.NextAttemptAt != nil {
				at = *d.NextAttemptAt
			}
			l.push(at, d.ID)
		}
	}
}

// releaseLeases gives up every lease this engine holds (Run returned: another replica may
// take its webhooks at once).
func (e *Engine) releaseLeases() {
	e.mu.Lock()
	var ls []Lease
	for _, l := range e.lanes {
		if l.owned && l.lease != nil {
			ls = append(ls, l.lease)
			l.owned, l.lease = false, nil
		}
	}
	e.mu.Unlock()
	for _, l := range ls {
		if err := l.Release(context.Background()); err != nil {
			e.opts.Logger.Warn("release webhook lease", "err", err)
		}
	}
}
