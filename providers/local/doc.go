// Package local is the vendor_d_local provider: local folders, Maildir
// folders and mbox files under a root directory.
//
// Config keys:
//
//	root       required; the directory the provider may touch
//	transient_every  optional, for tests: every Nth fetch or trash fails
//	           with providers.ErrTransient (fault injection)
//	trash_dir  optional; the freedesktop.org trash to use (default the home
//	           trash, $XDG_DATA_HOME/Trash, falling back to ROOT/.Trash-UID
//	           when the home trash is on another filesystem)
//
// A source ref is a directory relative to root ("" is root itself). Within
// a source:
//
//   - a regular file is an object whose id is its slash-separated path
//     relative to the source, whose version is derived from its
//     modification time, size and inode, and whose kind follows its
//     extension (photo, video, file);
//   - a directory holding cur/ and new/ is a Maildir: each message is an
//     object with id "MAILDIR/UNIQUE" (stable across flag changes and the
//     move from new/ to cur/), mail headers parsed, Starred from the F flag;
//   - a file named *.mbox or *.mbx, or without extension and starting with
//     "From ", is an mbox: each message is an object with id
//     "FILE#OFFSET", its content the stored message without the From_ line,
//     its version and SHA-256 the hash of that content.
//
// Trash follows the freedesktop.org Trash specification for files (a
// .trashinfo file, then a rename into files/), so the desktop's trash can
// restore them too and Untrash puts them back. A Maildir message is trashed
// the Maildir way, with the T (trashed) flag, and untrashed by clearing it.
// Messages in an mbox can be listed and fetched but not trashed, removed or
// written: rewriting a shared mbox in place is not worth its risk.
//
// File names are any bytes POSIX allows; ids are UTF-8 without control
// characters. A name that is not (a newline, a control character, invalid
// UTF-8) or that starts with "%" appears in ids, names and paths in an
// encoded form: "%", then the name with each control byte, "%" and byte of
// invalid UTF-8 written %XX ("a\nb.txt" is "%a%0Ab.txt"). Every other name
// is its own encoded form. Fetch, Trash, Untrash, Remove and Write decode
// ids, so they work on the names listed. Left out of listings: trash folders
// (.Trash*), svc's own temporary files (.svc-write-<32 hex>.tmp), and a file
// whose id would exceed the contract's 1,024 bytes (a deep tree of long
// names), which is logged with the count of such files.
//
// The revision marker is a snapshot_hash over the listed ids and versions.
// Changes recognises the current marker (no changes) and answers
// ErrMarkerExpired for any other: local folders keep no change journal.
//
// # Stability
//
// Not yet stable: built-in providers are used through providers.Registry (providers/builtin),
// not imported directly. Its exported API may change between commits; docs/stability.md says
// what is stable and what will move.
package local
