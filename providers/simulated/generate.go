package simulated

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"svc.dev/svc/internal/corpus"
	"svc.dev/svc/mail"
	"svc.dev/svc/providers"
)

// mix is splitmix64's finalizer: a cheap, well-distributed hash of x.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

// rng is a tiny deterministic stream of numbers for one object.
type rng uint64

func (r *rng) next() uint64 { *r = rng(mix(uint64(*r))); return uint64(*r) }

// intn returns a number in [0, n).
func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

// logUniform returns a number in [lo, hi) spread evenly over magnitudes.
func (r *rng) logUniform(lo, hi float64) int64 {
	f := float64(r.next()>>11) / (1 << 53)
	return int64(math.Exp(math.Log(lo) + f*(math.Log(hi)-math.Log(lo))))
}

func objectID(files bool, i int) string {
	if files {
		return fmt.Sprintf("file-%08d", i)
	}
	return fmt.Sprintf("msg-%08d", i)
}

func parseID(files bool, id string) (int, bool) {
	prefix := "msg-"
	if files {
		prefix = "file-"
	}
	if !strings.HasPrefix(id, prefix) || len(id) != len(prefix)+8 {
		return 0, false
	}
	n, err := strconv.Atoi(id[len(prefix):])
	return n, err == nil && n >= 0
}

// original returns the index object i duplicates, or i itself. A duplicate
// copies an earlier object's name, size and content.
func original(seed uint64, i int) int {
	r := rng(mix(seed ^ uint64(i)*0x9e3779b97f4a7c15 ^ 0xd0b1))
	if i > 0 && r.intn(100) < 5 {
		return i - 1 - r.intn(min(i, 1000))
	}
	return i
}

var (
	newsletterSenders = []string{"news@dailybrief.example", "digest@techweekly.example", "hello@recipes.example", "updates@citynews.example", "letters@bookclub.example"}
	promoSenders      = []string{"deals@shopmart.example", "offers@travelnow.example", "sale@fashionhub.example", "promo@gadgets.example"}
	people            = []string{"alice@friends.example", "bob@work.example", "carol@family.example", "dan@club.example", "erin@school.example"}
	fileExts          = []string{"pdf", "docx", "xlsx", "jpg", "jpg", "jpg", "png", "mp4", "zip", "txt"}
	folders           = []string{"Documents", "Photos", "Videos", "Finance", "Projects", "Archive", "Shared"}
	self              = "me@simulated.example"
)

// generate returns generated object i of a source as of epoch.
func generate(seed uint64, files bool, i int, epoch time.Time) providers.Object {
	if o, ok := billingObject(seed, i, epoch); ok && !files { // billing.go
		return o
	}
	orig := original(seed, i)
	if o, ok := billingObject(seed, orig, epoch); ok && !files && orig != i { // a copy of one
		o.ID, o.Metadata["duplicate_of"] = objectID(false, i), objectID(false, orig)
		return o
	}
	r := rng(mix(seed ^ uint64(orig)*0x9e3779b97f4a7c15))
	own := rng(mix(seed ^ uint64(i)*0xc2b2ae3d27d4eb4f)) // per-object traits, not copied by duplicates
	// Ages: 30% within 90 days, the rest up to ten years, older ones rarer.
	var age time.Duration
	if own.intn(100) < 30 {
		age = time.Duration(own.intn(90*24)) * time.Hour
	} else {
		age = time.Duration(own.logUniform(90*24, 3650*24)) * time.Hour
	}
	created := epoch.Add(-age).Truncate(time.Second)
	o := providers.Object{
		ID:         objectID(files, i),
		Version:    "v1",
		CreatedAt:  created,
		ModifiedAt: created,
		Starred:    own.intn(100) < 3,
		Metadata:   map[string]string{"content_id": strconv.Itoa(orig)},
	}
	if orig != i {
		o.Metadata["duplicate_of"] = objectID(files, orig)
	}
	if files {
		generateFile(&o, &r, &own)
	} else {
		generateMail(&o, &r, created, seed, orig)
		// Each message has its own Message-ID, which its duplicates share: the same message
		// delivered twice, the second copy also filed in another folder, as a plan's duplicate
		// detection meets it in a real mailbox. (A message drawn from the corpus pool, which
		// other messages draw from too, is listed under this id, not the pool message's own,
		// so that only real duplicates share one.)
		o.Metadata[mail.FactMessageID] = messageID(seed, orig)
		if orig != i {
			o.Containers = append(slices.Clone(o.Containers), "Archive")
		}
	}
	return o
}

// messageID is the Message-ID of generated message orig (without angle brackets).
func messageID(seed uint64, orig int) string {
	return fmt.Sprintf("%d.%d@simulated.example", seed, orig)
}

func generateFile(o *providers.Object, r, own *rng) {
	ext := fileExts[r.intn(len(fileExts))]
	folder := folders[r.intn(len(folders))]
	year := 2016 + r.intn(11)
	base := fmt.Sprintf("%s-%d-%04d", strings.ToLower(folder), year, r.intn(10000))
	o.Kind = providers.KindFile
	o.SizeBytes = r.logUniform(2<<10, 400<<10)
	switch ext {
	case "jpg", "png":
		o.Kind, o.MIMEType, o.SizeBytes = providers.KindPhoto, "image/"+map[string]string{"jpg": "jpeg", "png": "png"}[ext], r.logUniform(200<<10, 6<<20)
	case "mp4":
		o.Kind, o.MIMEType, o.SizeBytes = providers.KindVideo, "video/mp4", r.logUniform(5<<20, 200<<20)
	case "pdf":
		o.MIMEType = "application/pdf"
		if folder == "Finance" {
			o.Kind, base = providers.KindStatement, fmt.Sprintf("statement-%d-%02d", year, 1+r.intn(12))
		}
	case "zip":
		o.MIMEType, o.SizeBytes = "application/zip", r.logUniform(1<<20, 50<<20)
	case "txt":
		o.MIMEType = "text/plain"
	case "docx":
		o.MIMEType = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	case "xlsx":
		o.MIMEType = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	}
	if r.intn(100) < 8 { // a large file
		o.SizeBytes = r.logUniform(20<<20, 60<<20)
	}
	o.Name = base + "." + ext
	o.ParentID = "folder-" + strings.ToLower(folder)
	o.Path = fmt.Sprintf("%s/%d/%s", folder, year, o.Name)
	o.Containers = []string{folder}
	o.Permissions = []providers.Permission{{Principal: self, Role: providers.RoleOwner, Type: providers.PrincipalUser}}
	if own.intn(100) < 10 {
		o.Shared = true
		if own.intn(2) == 0 {
			o.Permissions = append(o.Permissions, providers.Permission{Principal: "anyone", Role: providers.RoleReader, Type: providers.PrincipalLink})
		} else {
			o.Permissions = append(o.Permissions, providers.Permission{Principal: people[own.intn(len(people))], Role: providers.RoleWriter, Type: providers.PrincipalUser})
		}
	}
}

// corpusKey is the metadata key of the pool index of a message drawn from the corpus.
const corpusKey = "corpus_message"

// A mail source draws its corpus messages from poolChunks chunks of poolChunk messages, each
// generated when first used: consecutive objects draw from one chunk, so the first page of a
// listing generates one chunk (a few milliseconds), not the whole pool.
const (
	poolChunk  = 32
	poolChunks = 8
)

// pooled is a message of the labelled corpus (internal/corpus), read by svc's mail reader on first
// use.
type pooled struct {
	raw     []byte
	folder  string
	once    sync.Once
	headers providers.MessageHeaders
	facts   map[string]string
}

func (p *pooled) read() *pooled {
	p.once.Do(func() {
		h, facts := providers.ReadMail(bytes.NewReader(p.raw))
		p.headers, p.facts = *h, facts
	})
	return p
}

var (
	poolMu sync.Mutex
	pools  = map[[2]uint64][]pooled{}
)

// pool returns chunk c of a source's corpus messages: the same variety as the corpus svc's
// classes are measured on (conversations, lists, code-host threads, receipts, marketing, spam,
// notices; every charset and MIME shape), generated once per source seed and chunk; each
// message is read when first listed.
func pool(seed uint64, c int) []pooled {
	poolMu.Lock()
	defer poolMu.Unlock()
	key := [2]uint64{seed, uint64(c)}
	if p, ok := pools[key]; ok {
		return p
	}
	msgs := corpus.Generate(mix(seed^uint64(c)), poolChunk, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	p := make([]pooled, len(msgs))
	for i, m := range msgs {
		p[i].raw, p[i].folder = m.Raw, m.Folder
	}
	pools[key] = p
	return p
}

func generateMail(o *providers.Object, r *rng, date time.Time, seed uint64, orig int) {
	h := &providers.MessageHeaders{To: []string{self}, Date: date}
	o.Kind, o.MIMEType, o.Message = providers.KindMessage, "message/rfc822", h
	o.SizeBytes = r.logUniform(2<<10, 80<<10)
	labels := []string{"INBOX"}
	switch c := r.intn(100); {
	case c < 50 || (c >= 70 && c < 82):
		// Most of the mailbox comes from the labelled corpus (its receipts and notices
		// included); the billing and payout mail of billing.go is placed apart.
		c, k := (orig/64)%poolChunks, r.intn(poolChunk)
		m := pool(seed, c)[k].read()
		*h = m.headers
		h.Date = date
		o.SizeBytes = max(o.SizeBytes, int64(len(m.raw)))
		o.Metadata[corpusKey] = strconv.Itoa(c*poolChunk + k)
		for k, v := range m.facts {
			o.Metadata[k] = v
		}
		if m.folder != "" {
			labels = []string{m.folder}
		}
	case c < 62:
		from := newsletterSenders[r.intn(len(newsletterSenders))]
		domain := from[strings.IndexByte(from, '@')+1:]
		h.From, h.Subject = from, fmt.Sprintf("Issue #%d: this week's picks", 1+r.intn(500))
		h.ListID = "<weekly." + domain + ">"
		h.ListUnsubscribe = "<https://" + domain + "/unsubscribe?u=" + strconv.FormatUint(r.next()%1e9, 36) + ">, <mailto:unsubscribe@" + domain + ">"
		labels = append(labels, "Newsletters")
	case c < 70:
		from := promoSenders[r.intn(len(promoSenders))]
		domain := from[strings.IndexByte(from, '@')+1:]
		h.From, h.Subject = from, fmt.Sprintf("%d%% off everything this weekend", 10+5*r.intn(12))
		h.ListID = "<promo." + domain + ">"
		h.ListUnsubscribe = "<https://" + domain + "/u/" + strconv.FormatUint(r.next()%1e9, 36) + ">"
		h.ListUnsubscribePost = true
		labels = append(labels, "Promotions")
	default:
		h.From = people[r.intn(len(people))]
		h.Subject = []string{"Re: weekend plans", "Photos from the trip", "Meeting notes", "Re: re: the contract", "Dinner on Friday?"}[r.intn(5)]
		h.Cc = []string{people[r.intn(len(people))]}
		h.ThreadID = "thr-" + strconv.FormatUint(r.next()%50000, 36)
	}
	if r.intn(100) < 8 { // a large attachment
		o.SizeBytes = r.logUniform(2<<20, 25<<20)
		labels = append(labels, "Attachments")
	}
	if h.ThreadID == "" {
		h.ThreadID = "thr-" + strconv.FormatUint(r.next()%1e12, 36)
	}
	h.Snippet = h.Subject
	o.Name = h.Subject
	o.Containers = labels
}

// content streams a generated object's bytes: for mail an RFC 5322 header
// block followed by a deterministic body, for files deterministic bytes; the
// length is the object's size. Duplicates stream identical bytes.
type content struct {
	head []byte
	rand *rand.ChaCha8
	left int64
	text bool   // a message's body: words, not random bytes
	word []byte // what is left of the current word
}

// bodyWords are what simulated message bodies are made of, so that vaulted mail has text to
// search.
var bodyWords = strings.Fields(`the a to and of for your on this is in we our please you with will be
invoice payment receipt order account statement balance due amount total paid refund subscription
renewal plan trial price discount offer sale weekend week month today tomorrow meeting notes
agenda project report schedule review contract draft signed attached photos trip dinner friday
family team update reminder question thanks regards hello lake house garden kitchen budget tax
shipping delivery tracking package return warranty support ticket password security login`)

func newContent(seed uint64, files bool, i int, epoch time.Time, o providers.Object) *content {
	orig := original(seed, i)
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	binary.LittleEndian.PutUint64(key[8:], uint64(orig))
	if files {
		key[16] = 1
	}
	c := &content{rand: rand.NewChaCha8(key), left: o.SizeBytes}
	if !files {
		k := i
		if _, ok := billingObject(seed, i, epoch); !ok {
			k = orig
		}
		if raw, ok := billingRaw(seed, k, epoch); ok {
			c.head, c.left = raw, int64(len(raw))
			return c
		}
	}
	if !files && o.Message != nil {
		// The header block is built from the original so duplicates match.
		og := generate(seed, files, orig, epoch)
		if k, err := strconv.Atoi(og.Metadata[corpusKey]); err == nil {
			c.head = pool(seed, k/poolChunk)[k%poolChunk].raw // the corpus message as written, then padding
			if int64(len(c.head)) > c.left {
				c.head = c.head[:c.left]
			}
			return c
		}
		h := og.Message
		var b bytes.Buffer
		fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMessage-ID: <%s>\r\n",
			h.From, strings.Join(h.To, ", "), h.Subject, h.Date.Format(time.RFC1123Z), messageID(seed, orig))
		if h.ListUnsubscribe != "" {
			fmt.Fprintf(&b, "List-Id: %s\r\nList-Unsubscribe: %s\r\n", h.ListID, h.ListUnsubscribe)
		}
		if h.ListUnsubscribePost {
			b.WriteString("List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n")
		}
		b.WriteString("Content-Type: text/plain; charset=us-ascii\r\n\r\n")
		c.text = true
		c.head = b.Bytes()
		if int64(len(c.head)) > c.left {
			c.head = c.head[:c.left]
		}
	}
	return c
}

func (c *content) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n := 0
	if len(c.head) > 0 {
		n = copy(p, c.head)
		c.head = c.head[n:]
	}
	if n < len(p) && c.text {
		c.words(p[n:])
		n = len(p)
	}
	if n < len(p) {
		_, _ = c.rand.Read(p[n:])
		n = len(p)
	}
	c.left -= int64(n)
	return n, nil
}

func (c *content) Close() error { return nil }

// Write implements providers.Writer. Written content is held in memory (at
// most 256 MiB per provider): the simulated provider is a test double, not a
// store.
func (p *Provider) Write(ctx context.Context, req providers.WriteRequest, body io.Reader) (providers.Object, error) {
	if err := p.enter(ctx); err != nil {
		return providers.Object{}, err
	}
	s, err := p.source(req.SourceRef)
	if err != nil {
		return providers.Object{}, err
	}
	if req.Path == "" || strings.HasSuffix(req.Path, "/") {
		return providers.Object{}, fmt.Errorf("simulated: write path %q: %w", req.Path, providers.ErrInvalidArgument)
	}
	data, err := io.ReadAll(io.LimitReader(body, maxWrittenBytes+1))
	if err != nil {
		return providers.Object{}, fmt.Errorf("simulated: read content: %w", err)
	}
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	switch {
	case len(data) > maxWrittenBytes:
		return providers.Object{}, fmt.Errorf("simulated: content over %d bytes: %w", maxWrittenBytes, providers.ErrPermission)
	case req.SizeBytes >= 0 && int64(len(data)) != req.SizeBytes:
		return providers.Object{}, fmt.Errorf("simulated: content is %d bytes, expected %d: %w", len(data), req.SizeBytes, providers.ErrInvalidData)
	case req.SHA256 != "" && req.SHA256 != digest:
		return providers.Object{}, fmt.Errorf("simulated: content sha256 %s, expected %s: %w", digest, req.SHA256, providers.ErrInvalidData)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var total int64
	for _, w := range s.written {
		total += int64(len(w.data))
		if w.obj.Path == req.Path && !w.removed && !w.trashed {
			if !req.Overwrite {
				return providers.Object{}, fmt.Errorf("simulated: %q: %w", req.Path, providers.ErrAlreadyExists)
			}
			w.removed, w.data = true, nil
			s.record(w.obj.ID, true)
		}
	}
	if total+int64(len(data)) > maxWrittenBytes {
		return providers.Object{}, fmt.Errorf("simulated: written content over %d bytes: %w", maxWrittenBytes, providers.ErrPermission)
	}
	kind := req.Kind
	if !kind.Valid() {
		kind = providers.KindFile
	}
	name := req.Path[strings.LastIndexByte(req.Path, '/')+1:]
	o := providers.Object{
		ID:         fmt.Sprintf("w-%08d", len(s.written)),
		Version:    "v1",
		Kind:       kind,
		Name:       name,
		Path:       req.Path,
		SizeBytes:  int64(len(data)),
		SHA256:     digest,
		MIMEType:   req.MIMEType,
		CreatedAt:  p.cfg.epoch,
		ModifiedAt: p.cfg.epoch,
		Metadata:   req.Metadata,
	}
	s.written = append(s.written, &written{obj: o, data: data})
	s.record(o.ID, false)
	return o, nil
}

// words fills p with words drawn from bodyWords, separated by spaces, with a line break every
// dozen words or so.
func (c *content) words(p []byte) {
	for len(p) > 0 {
		if len(c.word) == 0 {
			r := c.rand.Uint64()
			c.word = append(c.word[:0], bodyWords[r%uint64(len(bodyWords))]...)
			if r>>32%12 == 0 {
				c.word = append(c.word, '\r', '\n')
			} else {
				c.word = append(c.word, ' ')
			}
		}
		n := copy(p, c.word)
		p, c.word = p[n:], c.word[n:]
	}
}
