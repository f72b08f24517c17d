package intel

import (
	"context"
	"fmt"
	"time"
)

// ObservationStore is what an incremental scan needs kept between scans: the observations of
// the mail already read, per namespace (a tenant and user, a connected source). The service
// layer implements it over its storage; the scan reads them back, adds the new messages, and
// saves the whole set again (it is bounded: at most 48 observations a service).
type ObservationStore interface {
	// LoadObservations returns what SaveObservations last saved for the namespace, or none.
	LoadObservations(ctx context.Context, namespace string) ([]Observation, error)
	// SaveObservations replaces the namespace's observations.
	SaveObservations(ctx context.Context, namespace string, obs []Observation) error
}

// ScanIncremental runs one incremental scan: it restores the namespace's observations from
// store, lets feed give the scanner the messages that arrived since the last scan (from a
// source's delta marker), saves the observations and returns the result as of asOf. A message
// fed again is not counted twice (its Message-ID is known).
func ScanIncremental(ctx context.Context, store ObservationStore, o *Options, asOf time.Time, feed func(*Scanner) error) (Result, Stats, error) {
	s := NewScanner(o)
	prev, err := store.LoadObservations(ctx, s.opt.Namespace)
	if err != nil {
		return Result{}, Stats{}, fmt.Errorf("intel: load observations: %w", err)
	}
	s.Restore(prev)
	if err := feed(s); err != nil {
		return Result{}, s.Stats(), err
	}
	if err := store.SaveObservations(ctx, s.opt.Namespace, s.Observations()); err != nil {
		return Result{}, s.Stats(), fmt.Errorf("intel: save observations: %w", err)
	}
	return s.Result(asOf), s.Stats(), nil
}
