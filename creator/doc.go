// Package creator is creator revenue reconciliation: connected revenue sources, revenue items
// moving through their states from earning signal to settlement, and longitudinal anomalies.
//
// Connectors (stripe, storefront, statement, inbox) read sources into a Ledger of observations:
// activity per platform and month, published and announced terms, payouts and settlements,
// sponsor invoices and remittances. Reconcile turns a ledger into one Item per source and
// earning period (and per sponsor invoice), with expected, reported, scheduled and settled
// amounts in exact cents, an honest evidence level, and Anomalies of the spec's thirteen kinds
// found across periods. Service is the domain API a service layer calls over a Store it
// provides; Scan is the same pipeline over files, for `svc creator scan`.
//
// docs/creator.md explains every rule and threshold.
//
// # Stability
//
// Not yet stable: its exported API may change between commits while the service layer is wired
// onto it; docs/stability.md says what is stable and what will move.
package creator
