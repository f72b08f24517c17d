// Package gdrive is the vendor_a_files provider: the user's My Drive over
// the Google Drive API v3 (through google.golang.org/api), run out of
// process as "svc plugin serve vendor_a_files".
//
// Config keys (docs/providers.md, "vendor_a_files"):
//
//	access_token, refresh_token, token_type, expiry
//	            the source's OAuth token, as the connect flow stores it
//	client_id, client_secret, token_url
//	            svc's OAuth client at Google, to refresh the token
//	endpoint    the API root; default https://www.googleapis.com/ (the
//	            service is under drive/v3/)
//	quota_per_minute
//	            pacing in requests per user per minute; default 12000;
//	            "off" for fakes
//	writes_per_second
//	            pacing of trash and untrash; default 3
//
// A source ref is "root" (also "", "default" and "me"): the user's My
// Drive. Objects are files with binary content: the id is Drive's file
// id, the version Drive's version (it moves with every change, metadata
// included), the SHA-256 Drive's sha256Checksum, containers and path from
// the file's parent folders. Folders are containers, not objects, and
// Google Docs, Sheets and Slides (which have no bytes to download, only
// exports) are left out. The revision marker is Drive's changes start page
// token (kind page_token) read before the listing; Changes follows
// changes.list from it. Fetch streams alt=media and checks the bytes
// against sha256Checksum (or md5Checksum) and the size as they are read:
// a mismatch fails the read with ErrInvalidData. Trash and Untrash set the
// file's trashed flag; Quota is the account's storage (Drive, Gmail and
// Photos share it).
package gdrive
