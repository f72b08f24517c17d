package gmail

import (
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"svc.dev/svc/internal/vendorfake"
)

// Server is a fake Gmail API. Its URL is the API's root: the vendor_a_mail
// provider's endpoint ("{URL}/gmail/v1/...", "{URL}/batch/gmail/v1") and,
// at "{URL}/token", its OAuth 2.0 token endpoint.
type Server struct {
	*vendorfake.Base

	email string
	n     int
	pool  []seeded
	heads sync.Map // pool index -> *head

	mu        sync.Mutex
	changed   map[string]*message
	inserted  []string // ids of inserted messages, newest first
	history   []record
	historyID uint64 // the mailbox's current history id
	floor     uint64 // history.list from below this is 404
	kept      int
	failing   map[string]int
	nextID    uint64
	labels    [][2]string // the mailbox's own labels (id, name)
	nextLabel int
	imports   int   // messages.import calls that stored a message
	afterFail []int // answers for the next imports, after storing (0: drop the connection)
}

// head is what a pool message's metadata answer needs, computed once.
type head struct {
	headers []header
	snippet string
}

type header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// record is one history record.
type record struct {
	id     uint64
	kind   string // messagesAdded, messagesDeleted, labelsAdded, labelsRemoved
	msg    string
	labels []string
}

// New starts a fake mailbox; it is closed with the test.
func New(t interface{ Cleanup(func()) }, opts Options) *Server {
	s := Start(opts)
	t.Cleanup(s.Close)
	return s
}

// Start starts a fake mailbox; Close stops it.
func Start(opts Options) *Server {
	if opts.Email == "" {
		opts.Email = "sam.rivera@example.com"
	}
	if opts.HistoryKept <= 0 {
		opts.HistoryKept = 10000
	}
	s := &Server{Base: vendorfake.NewBase(), email: opts.Email, n: opts.Messages, pool: pool(opts),
		changed: map[string]*message{}, failing: map[string]int{}, kept: opts.HistoryKept, nextID: idBase + 1<<40,
		labels: slices.Clone(userLabels), nextLabel: len(userLabels) + 1}
	s.historyID = 20000
	s.floor = s.historyID
	s.Serve(map[string]http.HandlerFunc{"POST /batch/gmail/v1": s.batch, "/gmail/v1/": s.api, "/upload/gmail/v1/": s.upload})
	return s
}

// Messages is how many messages the mailbox holds (trashed ones
// included, deleted ones not).
func (s *Server) Messages() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.n + len(s.inserted)
	for _, m := range s.changed {
		if m.deleted {
			n--
		}
	}
	return n
}

// IDs lists the ids of the messages the mailbox was seeded with, then of those inserted.
func (s *Server) IDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, s.n+len(s.inserted))
	for i := range s.n {
		out = append(out, seededID(i))
	}
	for _, id := range s.inserted {
		out = append(out, id)
	}
	return out
}

// HistoryID is the mailbox's current history id.
func (s *Server) HistoryID() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.historyID
}

// addHistory records a change. Callers hold s.mu.
func (s *Server) addHistory(kind, msg string, labels ...string) uint64 {
	s.historyID++
	s.history = append(s.history, record{id: s.historyID, kind: kind, msg: msg, labels: labels})
	if len(s.history) > s.kept {
		drop := len(s.history) - s.kept
		s.floor = s.history[drop-1].id
		s.history = slices.Clone(s.history[drop:])
	}
	return s.historyID
}

// Insert delivers a message with the given labels and returns its id.
func (s *Server) Insert(raw []byte, labels ...string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.insert(raw, labels, time.Now().UTC())
}

// insert stores a new message. Callers hold s.mu.
func (s *Server) insert(raw []byte, labels []string, internal time.Time) string {
	s.nextID++
	id := strconv.FormatUint(s.nextID, 16)
	h := s.addHistory("messagesAdded", id)
	s.changed[id] = &message{id: id, thread: "t" + id[1:], raw: raw, labels: labels, internal: internal, history: h}
	s.inserted = append([]string{id}, s.inserted...)
	return id
}

// Delete deletes a message for good (as another client would).
func (s *Server) Delete(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.mutable(id)
	if m == nil {
		return false
	}
	m.deleted = true
	s.addHistory("messagesDeleted", id)
	return true
}

// Relabel adds and removes labels of a message (as another client would).
func (s *Server) Relabel(id string, add, remove []string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.relabel(id, add, remove) != nil
}

func (s *Server) relabel(id string, add, remove []string) *message {
	m := s.mutable(id)
	if m == nil {
		return nil
	}
	var added, removed []string
	for _, l := range add {
		if !slices.Contains(m.labels, l) {
			m.labels = append(m.labels, l)
			added = append(added, l)
		}
	}
	for _, l := range remove {
		if i := slices.Index(m.labels, l); i >= 0 {
			m.labels = slices.Delete(m.labels, i, i+1)
			removed = append(removed, l)
		}
	}
	if len(added) > 0 {
		m.history = s.addHistory("labelsAdded", id, added...)
	}
	if len(removed) > 0 {
		m.history = s.addHistory("labelsRemoved", id, removed...)
	}
	return m
}

// Labels returns a message's labels (nil when it does not exist).
func (s *Server) Labels(id string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.get(id); m != nil {
		return slices.Clone(m.labels)
	}
	return nil
}

// FailMessage makes every users.messages.get, trash and untrash of one
// message answer status (0 heals it): a per-object failure.
func (s *Server) FailMessage(id string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if status == 0 {
		delete(s.failing, id)
		return
	}
	s.failing[id] = status
}

// FailAfterImport makes the next users.messages.import calls store their
// message and then answer the given statuses, one per call (0 drops the
// connection instead): the failure that leaves a client not knowing
// whether its import took.
func (s *Server) FailAfterImport(statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.afterFail = append(s.afterFail, statuses...)
}

// Imports is how many messages users.messages.import stored.
func (s *Server) Imports() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.imports
}

// UserLabels returns the mailbox's own labels by id.
func (s *Server) UserLabels() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.labels))
	for _, l := range s.labels {
		out[l[0]] = l[1]
	}
	return out
}

// Raw returns a message's raw bytes (nil when it does not exist).
func (s *Server) Raw(id string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.get(id); m != nil {
		return slices.Clone(m.raw)
	}
	return nil
}

// AddLabel creates a user label (as another client would) and returns its id.
func (s *Server) AddLabel(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := "Label_" + strconv.Itoa(s.nextLabel)
	s.nextLabel++
	s.labels = append(s.labels, [2]string{id, name})
	return id
}
