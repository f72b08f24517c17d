package plan

import (
	"hash/maphash"
	"strings"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/mail"
)

// correspondents is what the mailbox itself shows about whom the owner knows, built once per
// plan from the listing of every mail source the plan covers: the owner's own addresses (the
// account's, and the From of their sent mail), their correspondents (the To and Cc of their sent
// mail) and the threads they wrote in (the Message-IDs and thread roots of their sent mail). It
// holds 64-bit keys, so its memory is bounded by the owner's sent mail and correspondents, not by
// the mailbox; a collision (about one in 2^64 per pair) can only keep a message.
type correspondents struct {
	seed                         maphash.Seed
	account, own, known, threads map[uint64]struct{}
	sentMessages                 int
	// recipients finds the addresses the mailbox's mail is addressed to most (the owner's,
	// whatever aliases they receive at, and their lists) in bounded memory.
	recipients heavyHitters
	messages   int
}

// heavyHitters is the Misra-Gries summary: at most k counters; an address's count is
// underestimated by at most n/k after n additions, so every address that is more than 1/k of
// the additions is in it.
type heavyHitters struct {
	k      int
	counts map[uint64]int
	n      int
}

func (h *heavyHitters) add(key uint64) {
	h.n++
	if _, ok := h.counts[key]; ok || len(h.counts) < h.k {
		h.counts[key]++
		return
	}
	for k, c := range h.counts {
		if c <= 1 {
			delete(h.counts, k)
		} else {
			h.counts[k] = c - 1
		}
	}
}

// frequent reports whether key is at least share of the additions (share > 1/k).
func (h *heavyHitters) frequent(key uint64, share float64) bool {
	c := h.counts[key]
	return c >= 3 && float64(c) >= share*float64(h.n)-float64(h.n)/float64(h.k)
}

func newCorrespondents(sources []Source) *correspondents {
	g := &correspondents{seed: maphash.MakeSeed(), account: map[uint64]struct{}{}, own: map[uint64]struct{}{},
		known: map[uint64]struct{}{}, threads: map[uint64]struct{}{}, recipients: heavyHitters{k: 256, counts: map[uint64]int{}}}
	for _, s := range sources {
		for _, a := range s.Addresses {
			if k := g.key(address(a)); k != 0 {
				g.account[k], g.own[k] = struct{}{}, struct{}{}
			}
		}
	}
	return g
}

// key is a normalized string's key; 0 for "".
func (g *correspondents) key(s string) uint64 {
	if s == "" {
		return 0
	}
	return maphash.String(g.seed, s) | 1
}

// idKey is a message id's key, with or without angle brackets.
func (g *correspondents) idKey(id string) uint64 {
	return g.key(strings.Trim(strings.TrimSpace(id), "<>"))
}

// sentByOwner reports whether a message is the owner's own: filed in a sent folder, marked so
// by the provider, or from one of the account's addresses.
func (g *correspondents) sentByOwner(o *Object) bool {
	if o.Kind != "message" {
		return false
	}
	if inFolder(o, sentFolders) != "" || o.Facts[mail.FactFromAddrSelf] == "true" {
		return true
	}
	return g.has(g.account, g.key(address(o.From)))
}

// listed counts a message's recipients (the first ten).
func (g *correspondents) listed(o *Object) {
	g.messages++
	n := 0
	for _, l := range [][]string{o.To, o.Cc} {
		for _, a := range l {
			if k := g.key(address(a)); k != 0 && n < 10 {
				g.recipients.add(k)
				n++
			}
		}
	}
}

// toOwner reports whether one of a message's first recipients is the owner's: an account
// address, one they sent from, or one much of the mailbox is addressed to (at least 1 in 100
// messages: the owner's aliases and the lists they receive).
func (g *correspondents) toOwner(to [2]uint64) bool {
	for _, k := range to {
		if k != 0 && (g.has(g.own, k) || g.recipients.frequent(k, 0.01)) {
			return true
		}
	}
	return false
}

// firstRecipients returns the keys of a message's first two recipients.
func (g *correspondents) firstRecipients(o *Object) (to [2]uint64) {
	n := 0
	for _, l := range [][]string{o.To, o.Cc} {
		for _, a := range l {
			if k := g.key(address(a)); k != 0 && n < len(to) {
				to[n] = k
				n++
			}
		}
	}
	return to
}

// sent adds the owner's message to the graph.
func (g *correspondents) sent(o *Object) {
	g.sentMessages++
	if k := g.key(address(o.From)); k != 0 {
		g.own[k] = struct{}{}
	}
	for _, l := range [][]string{o.To, o.Cc} {
		for _, a := range l {
			if k := g.key(address(a)); k != 0 {
				g.known[k] = struct{}{}
			}
		}
	}
	for _, id := range []string{o.Facts[mail.FactMessageID], o.ThreadID} {
		if k := g.idKey(id); k != 0 {
			g.threads[k] = struct{}{}
		}
	}
}

// evidence returns why the mailbox shows a message is a conversation the owner is part of, or
// "" when it does not.
func (g *correspondents) evidence(c *candidate) string {
	switch {
	case c.sent:
		return "conversation: you sent it"
	case c.thread != 0 && g.has(g.threads, c.thread), c.reply != 0 && g.has(g.threads, c.reply):
		return "conversation: a thread you wrote in"
	case c.from != 0 && g.has(g.known, c.from):
		return "conversation: from someone you have written to"
	case c.from != 0 && g.has(g.own, c.from):
		return "conversation: from your own address"
	}
	return ""
}

func (g *correspondents) has(m map[uint64]struct{}, k uint64) bool {
	_, ok := m[k]
	return ok
}

// markConversations settles, once the whole plan is listed, the messages whose class depends on
// the mailbox's evidence. A message with evidence (the owner sent it, wrote in its thread, wrote
// to its sender, or it is from the owner's address) is never removable: it is protected_by_rule
// with the evidence as its reason, or review when it was judged junk or its signals disagree.
// Classes the owner's rules gave, transactional and unreadable mail keep theirs. A message
// without evidence keeps the class judgeMail gave it (a stranger's mail is review, or junk with
// junk signals).
func markConversations(cands []candidate, g *correspondents, intern func(string) string) {
	for i := range cands {
		c := &cands[i]
		if !c.message || c.repeat || c.owner || c.kind == mailTransactional || c.kind == mailUnreadable {
			continue
		}
		ev := g.evidence(c)
		if ev != "" {
			c.model = false // the mailbox's evidence: the junk model never judges it
		}
		if ev == "" {
			// A stranger's person-like mail with a mark of junk is junk when it was not even
			// addressed to the owner.
			if c.kind == mailStranger && c.junk >= 1 && c.to[0] != 0 && !g.toOwner(c.to) {
				c.obj.StorageClass = svcv1.StorageClass_STORAGE_CLASS_LIKELY_REMOVABLE
				c.obj.StorageClassReason = intern("junk: unsolicited, from someone you never wrote to, not addressed to you, " + c.junkWhy)
			}
			continue
		}
		switch c.kind {
		case mailJunk, mailConflict:
			if c.sent {
				break
			}
			c.obj.StorageClass = svcv1.StorageClass_STORAGE_CLASS_REVIEW
			c.obj.StorageClassReason = intern("review: " + strings.TrimPrefix(strings.TrimPrefix(c.obj.StorageClassReason, "junk: "), "review: ") +
				"; but " + strings.TrimPrefix(ev, "conversation: "))
			continue
		}
		c.obj.StorageClass = svcv1.StorageClass_STORAGE_CLASS_PROTECTED_BY_RULE
		c.obj.StorageClassReason = ev
	}
}

// copyKey groups copies of one object: a message by its Message-ID and sender, anything else
// (and mail without a Message-ID) by its content hash.
type copyKey struct {
	message bool
	key     uint64
	sha     string
}

// copyOf returns the group an object's copies share, or false when nothing identifies it.
func (g *correspondents) copyOf(o *Object) (copyKey, bool) {
	if o.Kind == "message" {
		if id := strings.Trim(strings.TrimSpace(o.Facts[mail.FactMessageID]), "<>"); id != "" {
			return copyKey{message: true, key: g.key(id + "\x00" + address(o.From))}, true
		}
	}
	if o.SHA256 != "" {
		return copyKey{sha: o.SHA256}, true
	}
	return copyKey{}, false
}
