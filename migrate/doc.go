// Package migrate moves a single-node svc deployment up to a cluster: it copies a stopped
// server's data directory (its bbolt store, the receipt signing keys and, when the cluster's
// vault tiers are given, the local vault's files) into the cluster's store (PostgreSQL) and
// bucket, then reads everything back and checks it against the source, kind by kind: counts
// and a SHA-256 over every record's bytes (and over every vault file). `svc migrate` is its
// command; the stores are opened by the caller, so this package picks no storage engine.
//
// The copy keeps every sealed value as it is (source configurations, webhook secrets, the
// vault's wrapped data keys): the cluster must run with the data directory's master key
// (SVC_MASTER_KEY, or its key file). The receipt keys go into the store's secrets, sealed
// under that key.
package migrate
