package storage

import "context"

// PlatformKind names a kind of the developer platform's records (and the other records the
// seam reads only by key) in a PlatformRecord.
type PlatformKind string

// The kinds of PlatformRecord, in the order an import must store them (webhooks before their
// queues and deliveries). Value is the platform's JSON of the record unless said otherwise.
const (
	PlatformUser           PlatformKind = "user"            // key: user id
	PlatformSession        PlatformKind = "session"         // key: token hash
	PlatformOrg            PlatformKind = "org"             // key: organization id
	PlatformApplication    PlatformKind = "application"     // key: application id
	PlatformAPIKey         PlatformKind = "api_key"         // key: key id
	PlatformConnection     PlatformKind = "connection"      // key: connection id
	PlatformIdempotency    PlatformKind = "idempotency"     // key: the idempotency key
	PlatformConnectSession PlatformKind = "connect_session" // key: connect session id
	PlatformOAuthState     PlatformKind = "oauth_state"     // key: state hash
	PlatformWebhook        PlatformKind = "webhook"         // key: webhook id
	PlatformQueuedEvent    PlatformKind = "webhook_queued"  // key: webhook id "/" event id
	PlatformDelivery       PlatformKind = "webhook_delivery"
	PlatformBilling        PlatformKind = "billing"       // key as billing keeps it; value: the plain value
	PlatformUsageCounter   PlatformKind = "usage_counter" // key: scope "|" month "|" meter; value: the quantity, as Go formats a float64 ('g', -1)
	PlatformUsageOnce      PlatformKind = "usage_once"    // key: an AddOnce key; no value
	PlatformCeiling        PlatformKind = "ceiling"       // key: organization id
	PlatformIntelState     PlatformKind = "intel_state"   // key: tenant "/" key; value: the blob
	PlatformCreatorState   PlatformKind = "creator_state" // key: tenant "/" key; value: the blob
)

// PlatformKinds lists every PlatformKind in import order.
var PlatformKinds = []PlatformKind{PlatformUser, PlatformSession, PlatformOrg, PlatformApplication, PlatformAPIKey,
	PlatformConnection, PlatformIdempotency, PlatformConnectSession, PlatformOAuthState, PlatformWebhook,
	PlatformQueuedEvent, PlatformDelivery, PlatformBilling, PlatformUsageCounter, PlatformUsageOnce, PlatformCeiling,
	PlatformIntelState, PlatformCreatorState}

// PlatformRecord is one record the seam reads only by key (the developer platform's, usage,
// intel and creator state), as moved from one store to another (svc migrate).
type PlatformRecord struct {
	Kind  PlatformKind
	Key   string
	Value []byte
}

// PlatformExporter is a store whose records can be moved out: it yields every PlatformRecord
// it holds (the seam's other records are listed through the seam itself).
type PlatformExporter interface {
	// ExportPlatform calls fn with every record of kind, in key order, until fn returns an
	// error, which it returns. fn must not call the store.
	ExportPlatform(ctx context.Context, kind PlatformKind, fn func(PlatformRecord) error) error
}

// PlatformImporter is a store records can be moved into.
type PlatformImporter interface {
	// ImportPlatform stores records as they are (no side effect of the platform's own
	// writes: a user's organizations are the user's record), replacing one with the same kind
	// and key, in one transaction.
	ImportPlatform(ctx context.Context, records []PlatformRecord) error
}
