// Package mail is svc's one reader of stored mail messages (RFC 5322 and MIME): providers use it
// to list messages, the plan classifier to judge them, and later readers (intel, search) to read
// them.
//
// Read never fails. It decodes headers as people's mail clients wrote them: RFC 2047 encoded
// words in any charset the go-message charset package knows, RFC 2231 parameters, raw 8-bit
// header bytes (in the charset the message declares for its text when that decodes them, else as
// Windows-1252, the superset of Latin-1 that old clients actually wrote), folded and duplicated
// fields, broken dates and missing Message-IDs. Everything it returns is valid UTF-8; what it
// had to guess is listed in Message.Problems, and a message with nothing readable has
// Message.Unreadable set. It never changes or keeps the bytes it reads: a provider's content
// stays the original bytes.
//
// Facts turns a message into the small map of header facts that providers put in a listed
// object's metadata (keys "mail.*"), so that a classifier on the other side of a plugin boundary
// sees the same signals.
package mail
