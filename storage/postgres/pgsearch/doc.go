// Package pgsearch is the vault's search index on PostgreSQL full-text search, for svc running
// as several replicas on one database: every replica queries the same index (table
// search_docs), so a search answers the same whichever replica takes it.
//
// It speaks the query language of vault/search (search.Parse: the same syntax, fields and cost
// model) and answers with the same results: hits newest first, paged by the same positions,
// with the fields that matched and a snippet. Where PostgreSQL cannot do what bleve does, it
// says so (docs/search.md, "On PostgreSQL"): fuzzy clauses (word~1) are refused; wildcards and
// /regexp/ clauses are matched against each document's lexemes without an index, regular
// expressions in PostgreSQL's dialect; scores are ts_rank's, on another scale than bleve's.
//
// The index keeps its place in the vault's change feed in the database (table search_feed):
// Follow applies one batch of the feed under that row's lock, in the transaction that moves
// it, so replicas apply batches one at a time and in order, and any replica can tell how far
// the index is (Position). The schema is storage/postgres's (migration 00005_search.sql);
// storage/postgres.Store.SearchIndex opens an index on the store's pool.
package pgsearch
