// Package postgres is the PostgreSQL engine behind the storage seam (svc.dev/svc/storage):
// Store implements storage.Store on a pgx v5 connection pool, so that several processes can
// share one database.
//
// The schema is versioned in migrations/ (goose SQL files, embedded) and brought up to date
// by Open, under a session lock so that processes opening at once apply it once. Each kind of
// record has its own table, keyed by tenant and id, with columns for what is filtered and
// ordered on; protobuf records are kept as bytea beside them, the vault's records as JSONB.
//
// A change and the Writes passed with it (an event, an execution) are one SQL transaction.
// Functions passed to Update methods run inside it, on rows read FOR UPDATE, and may run again
// when PostgreSQL asks for a retry (a serialization failure or a deadlock).
//
// Only this package imports pgx for the store; nothing in the domain imports it.
package postgres
