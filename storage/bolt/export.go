package bolt

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	bbolt "go.etcd.io/bbolt"

	"svc.dev/svc/storage"
)

var _ storage.PlatformExporter = (*Seam)(nil)

// exportBuckets is the bucket of each kind a PlatformRecord names.
var exportBuckets = map[storage.PlatformKind]string{
	storage.PlatformUser: bUsers, storage.PlatformSession: bSessions, storage.PlatformOrg: bOrgs,
	storage.PlatformApplication: bApps, storage.PlatformAPIKey: bKeys, storage.PlatformConnection: bConnections,
	storage.PlatformIdempotency: bIdempotency, storage.PlatformConnectSession: bConnectSessions,
	storage.PlatformOAuthState: bOAuthStates, storage.PlatformWebhook: bWebhooks,
	storage.PlatformQueuedEvent: bWebhookQueue, storage.PlatformDelivery: bDeliveries,
	storage.PlatformBilling: bBilling, storage.PlatformUsageCounter: bUsage, storage.PlatformUsageOnce: "usage_once",
	storage.PlatformCeiling: bCeilings, storage.PlatformIntelState: "blob_intel_state",
	storage.PlatformCreatorState: "blob_creator_state",
}

// ExportPlatform yields every record of kind, in key order, from one read transaction (the
// store is a stopped server's: nothing writes meanwhile).
func (s *Seam) ExportPlatform(ctx context.Context, kind storage.PlatformKind, fn func(storage.PlatformRecord) error) error {
	name, ok := exportBuckets[kind]
	if !ok {
		return fmt.Errorf("export: unknown kind %q", kind)
	}
	return s.db.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(name))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			value := append([]byte(nil), v...)
			if kind == storage.PlatformUsageCounter {
				if len(v) != 8 {
					return fmt.Errorf("export: usage counter %q is not a float64", k)
				}
				value = strconv.AppendFloat(nil, math.Float64frombits(binary.BigEndian.Uint64(v)), 'g', -1, 64)
			}
			if kind == storage.PlatformUsageOnce {
				value = nil
			}
			return fn(storage.PlatformRecord{Kind: kind, Key: string(k), Value: value})
		})
	})
}
