// Package intel is svc's billing intelligence: it reads a person's mail for what their
// subscriptions are doing to them, and says so with evidence that never overstates.
//
// A Scanner is fed messages (raw bytes through Scan, read documents through ScanDocument, or
// every message under a path through ScanPath) and keeps, of each message that speaks of a
// service's billing, an Observation: the facts it states (charges and their lines, periods,
// plans, seats, usage, price changes, teasers, credits, trials, cancellations), each with the
// line that shows it. Result turns them into Meters, one per recurring paid service with the
// billing trap found in it (metered_overage, teaser_expiration, renewal_jump,
// free_credit_exhaustion, seat_growth, auto_upgrade, surcharge, variable_bill, or unknown), and
// Trials, with their outcome and whether they look worth keeping. Meter and Trial mirror the
// spec's JSON, field names included.
//
// Evidence levels are decided in one place: DETECTED for what mail shows, ESTIMATED for any
// projection, never CONFIRMED from mail. Ids are derived from the namespace and the service, so a
// rescan updates rather than duplicates. Decide records keep, stop and remind decisions on a
// trial (stop yields an RFC 8058 one-click unsubscribe or an unsupported_capability exclusion);
// Act applies watch, set_limit, explain, ignore and intervene to a meter.
//
// docs/intel.md says how each trap is decided, the thresholds, and what the figures measured on
// the synthetic mailbox are worth.
//
// # Stability
//
// Not yet stable: the API is shaped with the service layer that calls it and may change between
// commits; docs/stability.md says what is stable and what will move.
package intel
