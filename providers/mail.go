package providers

import (
	"io"
	"maps"

	"svc.dev/svc/mail"
)

// ReadMail reads a stored mail message with svc's mail reader and returns what a listed message
// carries: its headers, and the header facts (keys mail.Fact*) to merge into the object's
// Metadata so a classifier sees the same signals through a plugin boundary. It never fails:
// a message that cannot be read gives empty headers and the mail.FactUnreadable fact, and is
// still listed. Every string is valid UTF-8; r is only read, so the provider's content stays the
// original bytes.
func ReadMail(r io.Reader) (*MessageHeaders, map[string]string) {
	return messageHeaders(mail.Read(r))
}

// ReadMailHeader is ReadMail of the message's header block only (mail.ReadHeader): what a
// fetch returns, where the body's signals (Snippet, and the facts mail.attachments and
// mail.text_tail) are left to the listing. It costs a fraction of ReadMail.
func ReadMailHeader(b []byte) (*MessageHeaders, map[string]string) {
	return messageHeaders(mail.ReadHeader(b))
}

func messageHeaders(m *mail.Message) (*MessageHeaders, map[string]string) {
	h := &MessageHeaders{
		From:                m.From.Addr,
		Subject:             m.Subject,
		Date:                m.Date,
		ThreadID:            m.ThreadID(),
		ListID:              m.ListID,
		ListUnsubscribe:     m.ListUnsubscribe,
		ListUnsubscribePost: m.ListUnsubscribePost,
		Snippet:             m.Snippet(300),
	}
	if h.From == "" {
		h.From = m.From.Name
	}
	for _, a := range m.To {
		h.To = append(h.To, a.Addr)
	}
	for _, a := range m.Cc {
		h.Cc = append(h.Cc, a.Addr)
	}
	return h, m.Facts()
}

// WithFacts returns metadata with the facts added (facts win).
func WithFacts(metadata, facts map[string]string) map[string]string {
	if metadata == nil {
		metadata = make(map[string]string, len(facts))
	}
	maps.Copy(metadata, facts)
	return metadata
}
