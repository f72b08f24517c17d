// Package search is the vault's full-text index: one bleve index per tenant, holding for each
// vault object the text extracted when it was committed (a message's headers and body, a text
// document) and the metadata searches filter on (provider, source, type, date).
//
// The index is derived data. The vault stays the record: an index can be dropped and rebuilt
// from it at any time (Rebuild), while searches and updates go on; the server rebuilds a
// tenant's index as a job of kind index, and `svc vault reindex` does it offline.
//
// Queries use bleve's query-string syntax, narrowed to what a mail search user expects: every
// word must match (in any text field), "quoted phrases", -word to exclude, field:value and
// field:"a phrase" on the fields in Fields. Results are newest first and page with a position
// (the last hit's sort values) that stays valid while the index changes: objects committed
// after a search began sort before its position and never shift a later page.
package search
