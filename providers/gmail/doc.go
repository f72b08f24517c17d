// Package gmail is the vendor_a_mail provider: a mailbox over the Gmail API
// v1 (through google.golang.org/api), run out of process as "svc plugin
// serve vendor_a_mail".
//
// Config keys (docs/providers.md, "vendor_a_mail"):
//
//	access_token, refresh_token, token_type, expiry
//	            the source's OAuth token, as the connect flow stores it
//	client_id, client_secret, token_url
//	            svc's OAuth client at Google, to refresh the token
//	endpoint    the API root; default https://gmail.googleapis.com/
//	quota_per_minute
//	            pacing in Gmail quota units per user per minute; default
//	            15000 (Gmail's published per-user limit); "off" for fakes
//	batch_size  calls per batch request, 1 to 100; default 50
//
// A source ref is the mailbox's user id: "me" (also "" and "default") or
// the account's address. Objects are messages: the id is Gmail's message
// id, the version the message's historyId (it moves with every change to
// the message, labels included), the size Gmail's sizeEstimate in a
// listing and the raw message's length in a fetch, the containers its
// labels (system labels by id, INBOX, SPAM, CATEGORY_PROMOTIONS, ...; the
// user's by name). A listing covers every message but the trashed (spam
// included) and reads each one's headers (format=metadata) in batches;
// the revision marker is the mailbox's historyId (kind history_id) read
// before the listing; Changes follows users.history.list from it and
// answers ErrMarkerExpired when Gmail no longer has that history (404).
// Fetch reads the message in RFC 5322 form (format=raw). Write imports a
// message (users.messages.import, at most MaxImportBytes) into the label
// its path names, creating a missing user label, and never sends an import
// twice without first looking the message up by its Message-ID (Write's
// doc says how). Trash and Untrash are Gmail's; there is no Remove (deleting for good needs the
// full-mailbox scope svc does not ask for) and no quota (the Gmail API
// reports none; vendor_a_files reports the account's storage).
package gmail
