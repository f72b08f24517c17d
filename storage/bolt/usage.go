package bolt

import (
	"context"
	"encoding/binary"
	"math"
	"strings"

	bbolt "go.etcd.io/bbolt"

	"svc.dev/svc/storage"
)

const (
	bUsage    = "usage"
	bCeilings = "ceilings"
)

// UsageDelta adds Quantity to a meter of a scope (an organization or an application) in a
// month.
type UsageDelta = storage.UsageDelta

func usageKey(scope, month, meter string) []byte { return []byte(scope + "|" + month + "|" + meter) }

// AddUsage applies deltas in one transaction: each is counted exactly once, or none is.
func (db *DB) AddUsage(ctx context.Context, deltas []UsageDelta) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return db.update(func(tx *bbolt.Tx) error { return addUsageTx(tx, deltas) })
}

// addUsageTx adds deltas to the usage counters inside tx.
func addUsageTx(tx *bbolt.Tx, deltas []UsageDelta) error {
	if len(deltas) == 0 {
		return nil
	}
	b, err := bucket(tx, bUsage)
	if err != nil {
		return err
	}
	for _, d := range deltas {
		k := usageKey(d.Scope, d.Month, d.Meter)
		var v float64
		if old := b.Get(k); len(old) == 8 {
			v = math.Float64frombits(binary.BigEndian.Uint64(old))
		}
		if err := b.Put(k, binary.BigEndian.AppendUint64(nil, math.Float64bits(v+d.Quantity))); err != nil {
			return err
		}
	}
	return nil
}

// Usage returns a scope's meters in a month.
func (db *DB) Usage(ctx context.Context, scope, month string) (map[string]float64, error) {
	out := map[string]float64{}
	prefix := []byte(scope + "|" + month + "|")
	err := db.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bUsage))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(prefix); k != nil && prefixed(k, prefix); k, v = c.Next() {
			if len(v) == 8 {
				out[strings.TrimPrefix(string(k), string(prefix))] = math.Float64frombits(binary.BigEndian.Uint64(v))
			}
		}
		return nil
	})
	return out, err
}

// Ceiling is an organization's spending ceiling record.
type Ceiling = storage.Ceiling

// SetCeiling stores an organization's ceiling.
func (db *DB) SetCeiling(ctx context.Context, orgID string, c Ceiling) error {
	return db.update(func(tx *bbolt.Tx) error { return putJSON(tx, bCeilings, orgID, c) })
}

// CeilingOf returns an organization's ceiling, and false when none was set.
func (db *DB) CeilingOf(ctx context.Context, orgID string) (Ceiling, bool, error) {
	var c Ceiling
	err := db.view(func(tx *bbolt.Tx) error { return getJSON(tx, bCeilings, orgID, &c, ErrNotFound) })
	if err == ErrNotFound {
		return Ceiling{}, false, nil
	}
	return c, err == nil, err
}

// AddUsageOnce applies deltas unless key was applied before, in one transaction: usage that a
// resumed process may meter again (an execution's charges) is counted exactly once.
func (db *DB) AddUsageOnce(ctx context.Context, key string, deltas []UsageDelta) (applied bool, err error) {
	err = db.update(func(tx *bbolt.Tx) error {
		seen, err := bucket(tx, "usage_once")
		if err != nil {
			return err
		}
		if seen.Get([]byte(key)) != nil {
			return nil
		}
		if err := seen.Put([]byte(key), []byte{1}); err != nil {
			return err
		}
		if err := addUsageTx(tx, deltas); err != nil {
			return err
		}
		applied = true
		return nil
	})
	return applied, err
}

const bUsageLog = "usage_log"

// UsageLogOffset is how far the usage log (a file of increments appended before each metered
// call is answered) has been added to the counters.
func (db *DB) UsageLogOffset(ctx context.Context) (int64, error) {
	var off int64
	err := db.view(func(tx *bbolt.Tx) error {
		if b := tx.Bucket([]byte(bUsageLog)); b != nil {
			if v := b.Get([]byte("offset")); len(v) == 8 {
				off = int64(binary.BigEndian.Uint64(v))
			}
		}
		return nil
	})
	return off, err
}

// AddUsageFromLog adds deltas read from the usage log and moves its offset to off, in one
// transaction: each logged increment is counted exactly once.
func (db *DB) AddUsageFromLog(ctx context.Context, deltas []UsageDelta, off int64) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return db.update(func(tx *bbolt.Tx) error {
		if err := addUsageTx(tx, deltas); err != nil {
			return err
		}
		b, err := bucket(tx, bUsageLog)
		if err != nil {
			return err
		}
		return b.Put([]byte("offset"), binary.BigEndian.AppendUint64(nil, uint64(off)))
	})
}
