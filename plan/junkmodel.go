package plan

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/mail"
)

// The per-mailbox junk model: a statistical filter learned, while the plan is listed, from the
// mailbox's own junk (what the provider filed as spam, a Junk folder, an upstream filter's
// X-Spam-Flag) and from the mail the mailbox shows the owner keeps (their sent mail, the
// discussion lists they receive, transactional mail). Once the listing ends it judges the mail
// the rules left to review from strangers: a message far more like this mailbox's junk than
// like its kept mail is removable, with the model's score in the reason. It never overrides
// evidence: conversations, transactional mail and the owner's rules are settled first, and the
// model only looks at unsolicited mail the rules had no judgement of or could not decide.
//
// Words are hashed into modelBuckets counters per class (document frequencies), so its memory
// is fixed (2 MiB) whatever the mailbox; each message the model may judge keeps up to
// maxModelKeys bucket numbers until the plan is settled (for at most maxModelJudged messages).
const (
	modelBuckets = 1 << 18
	maxModelKeys = 48
	// A model needs this many messages of each class before it judges anything.
	modelMinExamples = 30
	// modelJunkScore is the score (0..1, Robinson-Fisher) from which a message is junk.
	modelJunkScore = 0.98
	// maxModelJudged bounds the words a plan keeps for the model: maxModelJudged messages of
	// maxModelKeys words (48 MiB), more when they have fewer words;
	// past that, unsolicited mail is planned on the rules alone.
	maxModelJudged = 250_000
)

type junkModel struct {
	junk, ham   []uint32 // per bucket: messages of the class that hold a word hashed there
	nJunk, nHam int
}

func newJunkModel() *junkModel {
	return &junkModel{junk: make([]uint32, modelBuckets), ham: make([]uint32, modelBuckets)}
}

// learn counts one message's words as junk or kept mail.
func (m *junkModel) learn(keys []uint32, junk bool) {
	counts := m.ham
	if junk {
		counts, m.nJunk = m.junk, m.nJunk+1
	} else {
		m.nHam++
	}
	for _, k := range keys {
		counts[k]++
	}
}

// ready reports whether the model has seen enough of both classes to judge.
func (m *junkModel) ready() bool { return m.nJunk >= modelMinExamples && m.nHam >= modelMinExamples }

// score is how much a message is like the mailbox's junk, 0 (like its kept mail) to 1: Gary
// Robinson's per-word probabilities, combined with Fisher's chi-square method (as SpamBayes
// does), over the words that say something (at least 0.1 from neutral).
func (m *junkModel) score(keys []uint32) float64 {
	const s, x = 0.45, 0.5 // strength and value of the prior belief about an unseen word
	var lnP, lnQ float64
	n := 0
	for _, k := range keys {
		b, g := float64(m.junk[k]), float64(m.ham[k])
		if b+g == 0 {
			continue
		}
		pb, pg := b/float64(m.nJunk), g/float64(m.nHam)
		p := pb / (pb + pg)
		f := (s*x + (b+g)*p) / (s + b + g)
		if math.Abs(f-0.5) < 0.1 {
			continue
		}
		lnP += math.Log(f)
		lnQ += math.Log(1 - f)
		n++
	}
	if n == 0 {
		return 0.5
	}
	spam := 1 - chi2Q(-2*lnQ, 2*n) // near 1 when the words are junk's
	ham := 1 - chi2Q(-2*lnP, 2*n)  // near 1 when they are kept mail's
	return (1 + spam - ham) / 2
}

// chi2Q is the probability that a chi-square variable with v (even) degrees of freedom is at
// least x2.
func chi2Q(x2 float64, v int) float64 {
	m := x2 / 2
	term := math.Exp(-m)
	sum := term
	for i := 1; i < v/2; i++ {
		term *= m / float64(i)
		sum += term
	}
	return min(sum, 1)
}

// reason is the model's removal reason.
func (m *junkModel) reason(score float64) string {
	return fmt.Sprintf("junk: like the junk in this mailbox (score %.2f, learned from %s and %s you keep)", score,
		plural(m.nJunk, "junk message"), plural(m.nHam, "message"))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// modelKeys hashes a message's words (subject and text tokens, which judgeMail tokenized) and
// a few facts of how it was sent (sender's domain, relays, origin, shape, obfuscation) into at
// most maxModelKeys distinct buckets, appended to dst.
func modelKeys(dst []uint32, o *Object, subj, text []string, domain string) []uint32 {
	start := len(dst)
	add := func(prefix, tok string) {
		if len(dst)-start >= maxModelKeys || tok == "" {
			return
		}
		h := uint32(2166136261) // FNV-1a, inline: no allocation per word
		for i := 0; i < len(prefix); i++ {
			h = (h ^ uint32(prefix[i])) * 16777619
		}
		for i := 0; i < len(tok); i++ {
			h = (h ^ uint32(tok[i])) * 16777619
		}
		k := h % modelBuckets
		if !slices.Contains(dst[start:], k) {
			dst = append(dst, k)
		}
	}
	f := o.Facts
	add("from:", registrable(domain))
	add("origin:", f[mail.FactOrigin])
	add("obf:", f[mail.FactObfuscated])
	add("html:", f[mail.FactHTMLOnly])
	if links, images, words, ok := shape(f[mail.FactShape]); ok {
		add("shape:", fmt.Sprintf("%d/%d/%d", min(links, 5), min(images, 3), min(words/50, 6)))
	}
	for _, r := range strings.Split(f[mail.FactRelays], ",") {
		add("relay:", r)
	}
	for _, t := range subj {
		if utf8.RuneCountInString(t) > 1 {
			add("s:", t)
		}
	}
	for _, t := range text {
		if utf8.RuneCountInString(t) > 2 {
			add("", t)
		}
	}
	return dst
}

// judgeByModel settles, once the listing has ended and the mailbox's evidence is weighed, the
// unsolicited mail the rules left undecided: what the model scores as this mailbox's junk is
// likely_removable. A message that is protected, transactional, or has any evidence (the owner
// wrote to its sender or in its thread) is left alone: markConversations has already made it
// protected_by_rule, and only review and unjudged classes are looked at.
func judgeByModel(cands []candidate, m *junkModel, keys []uint32, intern func(string) string) {
	for i := range cands {
		c := &cands[i]
		if !c.model || c.repeat || c.sent {
			continue
		}
		switch c.obj.StorageClass {
		case svcv1.StorageClass_STORAGE_CLASS_REVIEW, svcv1.StorageClass_STORAGE_CLASS_COLD:
		default:
			continue // decided: by evidence (protected), by the rules (junk), or by the owner's rules
		}
		if sc := m.score(keys[c.mk0 : c.mk0+int32(c.mkN)]); sc >= modelJunkScore {
			c.obj.StorageClass = svcv1.StorageClass_STORAGE_CLASS_LIKELY_REMOVABLE
			c.obj.StorageClassReason = intern(m.reason(math.Floor(sc*100) / 100))
		}
	}
}
