package gmail

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"svc.dev/svc/internal/corpus"
)

// Options configures a fake mailbox.
type Options struct {
	// Messages is how many messages the mailbox starts with.
	Messages int
	// Seed varies the generated mail.
	Seed uint64
	// Pool is how many distinct corpus messages are generated and reused
	// (0 means min(Messages, 2000)).
	Pool int
	// Email is the mailbox owner's address (default corpus.Owner).
	Email string
	// HistoryKept is how many history records the fake keeps; a
	// history.list from before them is answered 404 (default 10,000).
	HistoryKept int
}

// epoch is the newest seeded message's internal date; message i is i
// minutes older.
var epoch = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// idBase makes seeded ids look like Gmail's (16 hex digits).
const idBase = 0x18c0000000000000

// seeded is what a seeded message starts as.
type seeded struct {
	raw    []byte // the pool message
	labels []string
	kind   string
}

// message is a message's current state once it changed (or was inserted).
type message struct {
	id, thread string
	raw        []byte
	labels     []string
	internal   time.Time
	history    uint64
	deleted    bool
}

// pool builds the reusable corpus messages and their Gmail labels.
func pool(opts Options) []seeded {
	n := opts.Pool
	if n <= 0 {
		n = min(max(opts.Messages, 1), 2000)
	}
	msgs := corpus.Generate(opts.Seed+1, n, epoch)
	out := make([]seeded, len(msgs))
	for i, m := range msgs {
		var labels []string
		switch m.Folder {
		case "Sent":
			labels = append(labels, "SENT")
		case "Junk":
			labels = append(labels, "SPAM")
		default:
			labels = append(labels, "INBOX")
			switch m.Label {
			case corpus.Marketing:
				labels = append(labels, "CATEGORY_PROMOTIONS")
			case corpus.Notification:
				labels = append(labels, "CATEGORY_UPDATES")
			case corpus.Transactional:
				labels = append(labels, "CATEGORY_UPDATES", "Label_1") // Receipts
			default:
				labels = append(labels, "CATEGORY_PERSONAL")
			}
		}
		if !strings.Contains(m.Flags, "S") {
			labels = append(labels, "UNREAD")
		}
		if i%37 == 0 {
			labels = append(labels, "STARRED")
		}
		if i%11 == 0 && m.Folder == "" {
			labels = append(labels, "Label_2") // Family
		}
		out[i] = seeded{raw: m.Raw, labels: labels, kind: m.Kind}
	}
	return out
}

// userLabels are the mailbox's own labels (id, name).
var userLabels = [][2]string{{"Label_1", "Receipts"}, {"Label_2", "Family"}}

// systemLabels are Gmail's system labels.
var systemLabels = []string{"INBOX", "SPAM", "TRASH", "UNREAD", "STARRED", "IMPORTANT", "SENT", "DRAFT",
	"CATEGORY_PERSONAL", "CATEGORY_SOCIAL", "CATEGORY_PROMOTIONS", "CATEGORY_UPDATES", "CATEGORY_FORUMS"}

// seededID is the id of seeded message i.
func seededID(i int) string { return strconv.FormatUint(idBase+uint64(i), 16) }

// seededIndex is the index of a seeded id, or -1.
func (s *Server) seededIndex(id string) int {
	v, err := strconv.ParseUint(id, 16, 64)
	if err != nil || len(id) != 16 || v < idBase || v >= idBase+uint64(s.n) {
		return -1
	}
	return int(v - idBase)
}

// seededMessage is seeded message i as first made: its raw bytes are a
// header naming its id, then the pool message.
func (s *Server) seededMessage(i int) *message {
	p := s.pool[i%len(s.pool)]
	id := seededID(i)
	var raw bytes.Buffer
	fmt.Fprintf(&raw, "Delivered-To: %s\r\nX-Fake-Gmail-Id: %s\r\n", s.email, id)
	raw.Write(p.raw)
	return &message{id: id, thread: "t" + id[1:], raw: raw.Bytes(), labels: slices.Clone(p.labels),
		internal: epoch.Add(-time.Duration(i) * time.Minute), history: uint64(1000 + i%9000)}
}

// get returns a message's current state (nil when unknown or deleted).
// Callers hold s.mu.
func (s *Server) get(id string) *message {
	if m, ok := s.changed[id]; ok {
		if m.deleted {
			return nil
		}
		return m
	}
	if i := s.seededIndex(id); i >= 0 {
		return s.seededMessage(i)
	}
	return nil
}

// mutable returns a message for changing, remembering it. Callers hold s.mu.
func (s *Server) mutable(id string) *message {
	m := s.get(id)
	if m != nil {
		s.changed[id] = m
	}
	return m
}
