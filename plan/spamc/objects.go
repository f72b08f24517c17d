package spamc

import (
	"context"
	"fmt"
	"io"
	"maps"
	"time"

	"svc.dev/svc/mail"
	"svc.dev/svc/plan"
)

// Fetcher returns a listed message's content: what the provider stores.
type Fetcher func(ctx context.Context, id string) (io.ReadCloser, error)

// Listing is a plan.Objects whose messages carry spamd's verdict.
type Listing struct {
	in     plan.Objects
	fetch  Fetcher
	client Checker
	// Deadline, when set, is when the filter stops being asked: messages listed after it are
	// planned on the embedded rules alone (counted in Unchecked), so that a slow filter never
	// makes a plan miss its time budget.
	Deadline time.Time
	// Unchecked counts the messages listed after Deadline.
	Unchecked int
	// Checked, Spam and Failed count the messages asked about, called spam, and those that
	// could not be checked (fetch or spamd failed: they are planned on the embedded rules).
	Checked, Spam, Failed int
	// LastErr is the last failure, for reporting.
	LastErr error
}

// Objects wraps a listing: each message is fetched and checked by the filter (spamd or
// rspamd), and a spam verdict is set as its mail.spam fact ("spamd: 15.3/5.0"), which the classifier reads like an upstream
// filter's X-Spam-Flag. A message spamd calls ham, or that cannot be checked, is left as listed:
// a failing spamd never fails or changes a plan beyond the verdicts it gave.
func Objects(in plan.Objects, fetch Fetcher, c Checker) *Listing {
	return &Listing{in: in, fetch: fetch, client: c}
}

// Next implements plan.Objects.
func (l *Listing) Next(ctx context.Context) (plan.Page, error) {
	pg, err := l.in.Next(ctx)
	if err != nil {
		return pg, err
	}
	for i := range pg.Objects {
		o := &pg.Objects[i]
		if o.Kind != "message" || o.Facts[mail.FactSpam] != "" {
			continue
		}
		if !l.Deadline.IsZero() && time.Now().After(l.Deadline) {
			l.Unchecked++
			continue
		}
		v, err := l.check(ctx, o.ID)
		if err != nil {
			if ctx.Err() != nil {
				return plan.Page{}, ctx.Err()
			}
			l.Failed++
			l.LastErr = err
			continue
		}
		l.Checked++
		if v.Spam {
			l.Spam++
			facts := maps.Clone(o.Facts)
			if facts == nil {
				facts = map[string]string{}
			}
			facts[mail.FactSpam] = v.String()
			o.Facts = facts
		}
	}
	return pg, nil
}

func (l *Listing) check(ctx context.Context, id string) (Verdict, error) {
	rc, err := l.fetch(ctx, id)
	if err != nil {
		return Verdict{}, fmt.Errorf("fetch %s: %w", id, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, MaxMessageBytes+1))
	if err != nil {
		return Verdict{}, fmt.Errorf("fetch %s: %w", id, err)
	}
	return l.client.Check(ctx, b)
}
