// Package gdrive is the vendor_a_files provider: the user's My Drive and
// shared drives over the Google Drive API v3 (through
// google.golang.org/api), run out of process as "svc plugin serve
// vendor_a_files".
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
//	            pacing of the requests that create or change files (trash,
//	            untrash, folder creation, uploads); default 3
//	upload_chunk_bytes
//	            a resumable upload's chunk size, a multiple of 256 KiB;
//	            default 8 MiB (content up to it goes in one request)
//	docs        "export" (default): Google Docs editors files are objects,
//	            fetched as exports; "skip": they are left out
//
// A source ref is "root" (also "", "default" and "me"): the user's My
// Drive; or "drive:" and a shared drive's id: that shared drive (every
// request says supportsAllDrives, listings and changes name the driveId).
// Objects are files with binary content and Google Docs editors files:
// the id is Drive's file id, the version Drive's version (it moves with
// every change, metadata included), the SHA-256 Drive's sha256Checksum,
// containers and path from the file's parent folders. Folders are
// containers, not objects. Docs, Sheets, Slides and Drawings are exported
// (DOCX, XLSX, PPTX, SVG: Exports) and listed at their export's size;
// other Google types (forms, sites, shortcuts) are left out. The revision
// marker is Drive's changes start page token (kind page_token) read before
// the listing; Changes follows changes.list from it. Fetch streams
// alt=media and checks the bytes against sha256Checksum (or md5Checksum)
// and the size as they are read: a mismatch fails the read with
// ErrInvalidData. Trash and Untrash set the file's trashed flag; Write
// uploads (multipart, or a resumable session for large content); Quota is
// the account's storage (Drive, Gmail and Photos share it), or a shared
// drive's measured use.
package gdrive
