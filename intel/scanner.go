package intel

import (
	"bytes"
	"errors"
	"hash/fnv"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"svc.dev/svc/mail"
)

// Options configure a Scanner. The zero value is usable.
type Options struct {
	// Namespace scopes the derived meter and trial ids (a tenant, a user): the same service in
	// the same namespace has the same id in every scan.
	Namespace string
	// SourceID is put in every evidence item's sourceId (the connected source scanned).
	SourceID string
	// Document bounds what is read of each message (nil: mail's defaults).
	Document *mail.DocumentOptions
}

// Skip is a message a scan could not read, and why.
type Skip struct {
	Ref    string `json:"ref"`
	Reason string `json:"reason"`
}

// Stats count what a scan read.
type Stats struct {
	Messages   int `json:"messages"`   // messages given to the scanner
	Skipped    int `json:"skipped"`    // of which unreadable
	Duplicates int `json:"duplicates"` // of which already seen (same Message-ID)
	Billing    int `json:"billing"`    // of which said something about a service's billing or trial
}

// Limits of what a Scanner keeps, so that its memory does not grow with the mailbox: billing
// mail is kept (it is what meters are made of), everything else is counted and dropped.
const (
	maxSkipsKept       = 1000
	maxActivityDomains = 20000
	maxActivityPerKey  = 64
	// maxObsPerService is how many observations of one service are kept: the newest. Trap
	// rules look at the last bills and the notices around them; years of monthly bills of one
	// service need not all stay in memory.
	maxObsPerService = 48
)

// Scanner finds meters and trials in a stream of messages. Feed it messages with Scan (raw
// bytes from any reader: a file, an mbox message, a provider's fetch) or ScanDocument, then
// ask for Result as of a time. It keeps only what billing mail says (Observations), so a
// service layer can persist that and continue incrementally with Restore. A Scanner is not
// safe for concurrent use.
type Scanner struct {
	opt      Options
	services map[string]*service
	seen     map[uint64]struct{} // hashes of the Message-IDs of billing mail seen
	activity map[string][]time.Time
	skips    []Skip
	stats    Stats
}

// NewScanner returns a Scanner; o may be nil.
func NewScanner(o *Options) *Scanner {
	s := &Scanner{services: map[string]*service{}, seen: map[uint64]struct{}{}, activity: map[string][]time.Time{}}
	if o != nil {
		s.opt = *o
	}
	// Only text that could state a fact is turned into text (HTML conversion is most of a
	// message's reading cost, and most mail is not billing).
	d := mail.DocumentOptions{}
	if s.opt.Document != nil {
		d = *s.opt.Document
	}
	if d.Want == nil {
		d.Want = mayState
	}
	d.NoRecipients = true // intel reads who sent a message, never whom it was sent to
	if d.DeclineHeader == nil {
		d.DeclineHeader = quickSkip
	}
	s.opt.Document = &d
	return s
}

// Scan reads one message from r (ref says where it came from: a path, "path#offset", an
// object id). A message that cannot be read is recorded as skipped, with its reason, and
// returned as a *mail.SkipError; the scan goes on with the next message either way.
func (s *Scanner) Scan(ref string, r io.Reader) error {
	// The header alone rules out much of a mailbox (lists, spam, conversations): those are
	// declined as soon as the reader has the header, their bodies not read.
	d, err := mail.ReadDocument(r, s.opt.Document)
	if errors.Is(err, mail.ErrDeclined) {
		s.stats.Messages++
		return nil
	}
	if err != nil {
		s.stats.Messages++
		s.skip(ref, err)
		return err
	}
	s.ScanDocument(ref, d)
	return nil
}

func (s *Scanner) skip(ref string, err error) {
	s.stats.Skipped++
	reason := err.Error()
	var se *mail.SkipError
	if errors.As(err, &se) {
		reason = se.Reason
	}
	if len(s.skips) < maxSkipsKept {
		s.skips = append(s.skips, Skip{Ref: ref, Reason: reason})
	}
}

// skipHeaders are the starts of header lines (lowercase) that only list, code-host and
// spam-filter mail carries.
var skipHeaders = [][]byte{[]byte("list-post:"), []byte("x-spam-flag: yes"), []byte("x-spam-status: yes"), []byte("x-mailman-version:"),
	[]byte("x-google-group-id:"), []byte("x-groupsio-msgnum:"), []byte("x-discourse-post-id:"), []byte("x-github-reason:"),
	[]byte("x-gitlab-project:"), []byte("x-gitea-reason:"), []byte("x-bugzilla-reason:"), []byte("x-jira-fingerprint:")}

// quickSkip is notBilling and personal judged on the header's fields as written, before the
// body is read or any field decoded (mail.DocumentOptions.DeclineHeader): a list, a spam
// verdict, a reply in a conversation, a person's mail that forwards nothing. It may miss some of them (folded or encoded fields); extract checks again. It reads
// each header line's start in place, case-insensitively (it lowercased a copy of the header,
// a tenth of a scan's own work).
func quickSkip(raw []byte) bool {
	end := bytes.Index(raw, []byte("\n\n"))
	if k := bytes.Index(raw, []byte("\n\r\n")); k >= 0 && (end < 0 || k < end) {
		end = k
	}
	if end < 0 {
		return false // a header longer than the peek: read it properly
	}
	var subject, from, ctype []byte
	var haveSubject, haveFrom, haveCtype, inReplyTo bool
	for h := raw[:end+1]; len(h) > 0; {
		line := h
		if i := bytes.IndexByte(h, '\n'); i >= 0 {
			line, h = h[:i], h[i+1:]
		} else {
			h = nil
		}
		if len(line) == 0 {
			continue
		}
		switch line[0] | 0x20 {
		case 'l', 'x':
			for _, k := range skipHeaders {
				if hasPrefixFold(line, k) {
					return true
				}
			}
		case 's':
			if !haveSubject && hasPrefixFold(line, []byte("subject:")) {
				subject, haveSubject = line[len("subject:"):], true
			}
		case 'f':
			if !haveFrom && hasPrefixFold(line, []byte("from:")) {
				from, haveFrom = line[len("from:"):], true
			}
		case 'c':
			if !haveCtype && hasPrefixFold(line, []byte("content-type:")) {
				ctype, haveCtype = line[len("content-type:"):], true
			}
		case 'i':
			inReplyTo = inReplyTo || hasPrefixFold(line, []byte("in-reply-to:"))
		}
	}
	var buf [256]byte
	subject = lowerASCII(buf[:0], subject)
	fwd := bytes.Contains(subject, []byte("fw")) || bytes.Contains(subject, []byte("wg:")) || bytes.Contains(subject, []byte("tr:"))
	if bytes.HasPrefix(bytes.TrimSpace(subject), []byte("re:")) && !fwd && inReplyTo {
		return true
	}
	if i := bytes.LastIndexByte(from, '@'); i >= 0 && !fwd && !containsFold(ctype, []byte("multipart/mixed")) {
		dom := from[i+1:]
		if j := bytes.IndexAny(dom, "> \t\r\"'"); j >= 0 {
			dom = dom[:j]
		}
		var db [128]byte
		return isFreemail(string(lowerASCII(db[:0], dom))) // people's addresses are at the provider's domain itself
	}
	return false
}

// hasPrefixFold reports whether b starts with prefix (lowercase ASCII), ASCII case ignored.
func hasPrefixFold(b, prefix []byte) bool {
	if len(b) < len(prefix) {
		return false
	}
	for i, c := range prefix {
		if d := b[i]; d != c && ('A' > d || d > 'Z' || d+'a'-'A' != c) {
			return false
		}
	}
	return true
}

// containsFold reports whether b holds sub (lowercase ASCII), ASCII case ignored.
func containsFold(b, sub []byte) bool {
	for i := 0; i+len(sub) <= len(b); i++ {
		if hasPrefixFold(b[i:], sub) {
			return true
		}
	}
	return false
}

// lowerASCII appends b to dst with ASCII letters lowercased.
func lowerASCII(dst, b []byte) []byte {
	for _, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// hints are the words (lowercase) one of which any text that states a fact extract reads
// contains: a currency, or a word of trials, cancellations, plan changes, seats, credits or
// the user's activity.
var hints = [][]byte{[]byte("$"), []byte("€"), []byte("£"), []byte("usd"), []byte("eur"), []byte("gbp"), []byte("cad"), []byte("aud"),
	[]byte("chf"), []byte("dollar"), []byte("euro"), []byte("trial"), []byte("cancel"), []byte("upgrad"), []byte("moved"), []byte("switched"),
	[]byte("seat"), []byte("licen"), []byte("member"), []byte("credit"), []byte("plan"), []byte("summary"), []byte("ready"),
	[]byte("complete"), []byte("activity"), []byte("you created")}

// mayState reports whether a part's text may state something extract reads: whether it holds
// one of the hints, ASCII case ignored, in one pass of an automaton over its bytes (it
// lowercased a copy of each part and searched it for each hint).
func mayState(_ mail.TextKind, b []byte) bool {
	hintOnce.Do(func() {
		words := make([]string, len(hints))
		for i, h := range hints {
			words[i] = string(h)
		}
		hintAuto = build(words)
	})
	a := hintAuto
	n, s := a.ncls, 0
	for _, c := range b {
		s = int(a.next[s*n+int(a.class[c])])
		if a.hit[s] {
			return true
		}
	}
	return false
}

var (
	hintOnce sync.Once
	hintAuto *automaton
)

// Skip records a message that could not even be opened (a file error while walking), so that
// the scan's report lists it.
func (s *Scanner) Skip(ref string, err error) {
	s.stats.Messages++
	s.skip(ref, err)
}

// ScanDocument adds a message already read.
func (s *Scanner) ScanDocument(ref string, d *mail.Document) {
	s.stats.Messages++
	o := extract(d, ref, s.opt.SourceID, isFreemail)
	if o == nil {
		return
	}
	if o.Activity && !o.Charge && !o.TrialNotice {
		s.addActivity(o.ServiceKey, o.Date)
		return
	}
	if _, dup := s.seen[refHash(o.Ref)]; dup {
		s.stats.Duplicates++
		return
	}
	s.stats.Billing++
	s.add(o)
}

func (s *Scanner) addActivity(key string, t time.Time) {
	a, ok := s.activity[key]
	if !ok && len(s.activity) >= maxActivityDomains {
		return
	}
	if len(a) < maxActivityPerKey {
		s.activity[key] = append(a, t)
	}
}

func refHash(ref string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(ref))
	return h.Sum64()
}

func (s *Scanner) add(o *Observation) {
	s.seen[refHash(o.Ref)] = struct{}{}
	sv := s.services[o.ServiceKey]
	if sv == nil {
		sv = &service{key: o.ServiceKey, name: o.Service, domain: o.Domain}
		s.services[o.ServiceKey] = sv
	}
	// Prefer a name from a bill over a name from a notice.
	if o.Charge && o.Service != "" && (sv.name == "" || len(o.Service) < len(sv.name)) {
		sv.name = o.Service
	}
	i, _ := slices.BinarySearchFunc(sv.obs, o, func(a, b *Observation) int { return a.Date.Compare(b.Date) })
	sv.obs = slices.Insert(sv.obs, i, o)
	if len(sv.obs) > maxObsPerService {
		// Drop the oldest bill (notices and trial mail stay while there are bills to drop).
		k := slices.IndexFunc(sv.obs, func(x *Observation) bool { return x.Charge })
		if k < 0 {
			k = 0
		}
		// Its Message-ID goes too, so the duplicate set stays as small as what is kept.
		delete(s.seen, refHash(sv.obs[k].Ref))
		sv.obs = slices.Delete(sv.obs, k, k+1)
	}
}

// Observations returns what the scan kept, for a caller that persists it between scans.
func (s *Scanner) Observations() []Observation {
	var out []Observation
	for _, k := range s.keys() {
		for _, o := range s.services[k].obs {
			out = append(out, *o)
		}
	}
	return out
}

// Restore adds observations kept from an earlier scan; messages seen again are not counted
// twice.
func (s *Scanner) Restore(obs []Observation) {
	for i := range obs {
		if _, dup := s.seen[refHash(obs[i].Ref)]; dup {
			continue
		}
		o := obs[i]
		s.add(&o)
	}
}

// Skipped returns the messages skipped (at most the first 1,000) with their reasons.
func (s *Scanner) Skipped() []Skip { return s.skips }

// Stats returns the scan's counts.
func (s *Scanner) Stats() Stats { return s.stats }

func (s *Scanner) keys() []string {
	ks := make([]string, 0, len(s.services))
	for k := range s.services {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Result returns the meters and trials the mail shows as of asOf (mail dated after it is
// ignored), in service-name order. It does not change the Scanner: call it as often as needed.
func (s *Scanner) Result(asOf time.Time) Result {
	res := Result{AsOf: asOf.UTC(), Meters: []Meter{}, Trials: []Trial{}}
	for _, k := range s.keys() {
		sv := s.merged(k)
		if sv == nil {
			continue
		}
		sv.activity = s.activity[k]
		m, ok := meterOf(sv, s.opt.Namespace, asOf)
		if ok {
			res.Meters = append(res.Meters, m)
		}
		period := BillingPeriod("")
		if ok {
			period = m.BillingPeriod
		}
		if t, ok := trialOf(sv, s.opt.Namespace, period, asOf); ok {
			res.Trials = append(res.Trials, t)
		}
	}
	slices.SortStableFunc(res.Meters, func(a, b Meter) int { return strings.Compare(strings.ToLower(a.Service), strings.ToLower(b.Service)) })
	slices.SortStableFunc(res.Trials, func(a, b Trial) int { return strings.Compare(strings.ToLower(a.Service), strings.ToLower(b.Service)) })
	return res
}

// merged returns the service of a key with the observations of the same service known only by
// its name (mail through a payment processor without a Reply-To, a forward of it) folded in;
// nil for a name-only service that was folded into one with a domain.
func (s *Scanner) merged(k string) *service {
	sv := s.services[k]
	if strings.HasPrefix(k, "name:") {
		for _, o := range s.services {
			if o.domain != "" && strings.EqualFold(o.name, sv.name) {
				return nil
			}
		}
		return sv
	}
	var extra []*Observation
	for _, o := range s.services {
		if o.domain == "" && strings.EqualFold(o.name, sv.name) && o != sv {
			extra = append(extra, o.obs...)
		}
	}
	if len(extra) == 0 {
		return sv
	}
	m := *sv
	m.obs = append(slices.Clone(sv.obs), extra...)
	slices.SortStableFunc(m.obs, func(a, b *Observation) int { return a.Date.Compare(b.Date) })
	return &m
}

// ScanPath scans every message under a path (an mbox, a Maildir, a folder of .eml files, one
// message file: mail.Walk), skipping what cannot be read.
func (s *Scanner) ScanPath(path string) error {
	return mail.Walk(path, func(ref string, r io.Reader, err error) error {
		if err != nil {
			s.Skip(ref, err)
			return nil
		}
		s.Scan(ref, r)
		return nil
	})
}
