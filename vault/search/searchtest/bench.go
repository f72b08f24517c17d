package searchtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"svc.dev/svc/vault/search"
)

// Corpus makes synthetic mail messages: words drawn with a Zipf distribution from a
// vocabulary of 20,000 made-up words (as in natural text, a few words are very common and
// most are rare), subjects of 4 to 9 words, bodies of 60 to 250 words, 500 correspondents.
type Corpus struct {
	Vocab  []string
	people []string
}

// NewCorpus returns the corpus (the same words on every call).
func NewCorpus() *Corpus {
	r := rand.New(rand.NewPCG(1, 2))
	c := &Corpus{}
	const letters = "abcdefghijklmnopqrstuvwxyz"
	seen := map[string]bool{}
	for len(c.Vocab) < 20000 {
		n := 3 + r.IntN(8)
		var b strings.Builder
		for range n {
			b.WriteByte(letters[r.IntN(len(letters))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			c.Vocab = append(c.Vocab, w)
		}
	}
	for i := range 500 {
		c.people = append(c.people, fmt.Sprintf("%s %s <%s.%d@%s.example>", c.Vocab[r.IntN(2000)], c.Vocab[r.IntN(2000)], c.Vocab[i], i, c.Vocab[r.IntN(300)]))
	}
	return c
}

// Docs yields n messages, the same on every call.
func (c *Corpus) Docs(n int) func(yield func(search.Doc, error) bool) {
	return func(yield func(search.Doc, error) bool) {
		r := rand.New(rand.NewPCG(3, 4))
		z := rand.NewZipf(r, 1.1, 2, uint64(len(c.Vocab)-1))
		words := func(k int) string {
			var b strings.Builder
			for i := range k {
				if i > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(c.Vocab[z.Uint64()])
			}
			return b.String()
		}
		at := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := range n {
			d := search.Doc{ID: fmt.Sprintf("vlt_%026d", i), Subject: words(4 + r.IntN(6)), From: c.people[r.IntN(len(c.people))],
				To: c.people[r.IntN(len(c.people))], Body: words(60 + r.IntN(190)), Type: "message", MIMEType: "message/rfc822",
				Provider: "simulated", SourceID: "src_" + strconv.Itoa(r.IntN(3)), State: "committed",
				Date: at.Add(time.Duration(i) * 7 * time.Minute)}
			if !yield(d, nil) {
				return
			}
		}
	}
}

// Sized is an index that reports its size.
type Sized interface {
	Index
	Size(tenant string) (int64, error)
}

// Bench indexes SVC_SEARCH_BENCH_DOCS messages (default 100,000) through a rebuild into the
// index open returns, then runs 500 two-word queries (every word must match, newest first, a
// page of 50 with snippets), reporting indexing documents/s, query p50 and p99, index bytes
// per document, and the CPU this process used (an index in another process, PostgreSQL's,
// works mostly there). It does its work once whatever b.N is: run it with -benchtime=1x.
func Bench(b *testing.B, open func(text search.TextSource) Sized) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("SVC_SEARCH_BENCH_DOCS")); err == nil && v > 0 {
		n = v
	}
	c := NewCorpus()
	// The index keeps no text: snippets are cut from a TextSource, here the generated documents
	// in memory (the server's reads them from the vault).
	texts := make(map[string]search.Doc, n)
	x := open(func(_ context.Context, _, id string) (search.Doc, error) { return texts[id], nil })
	ctx := context.Background()
	all := c.Docs(n)
	recorded := func(yield func(search.Doc, error) bool) {
		all(func(d search.Doc, err error) bool {
			texts[d.ID] = search.Doc{Subject: d.Subject, Name: d.Name, Body: d.Body}
			return yield(d, err)
		})
	}
	// CPU time (this process, all threads) next to wall time: on a shared machine the wall
	// time depends on what else runs; CPU per document and per query much less.
	cpu0 := cpuTime()
	start := time.Now()
	got, err := x.Rebuild(ctx, "t", recorded, nil)
	if err != nil || got != n {
		b.Fatalf("indexed %d: %v", got, err)
	}
	indexing, indexingCPU := time.Since(start), cpuTime()-cpu0
	size, err := x.Size("t")
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	var lat []time.Duration
	hits := 0
	cpu0 = cpuTime()
	for range 500 {
		// Two words of rank 10 to 1,000: common enough to match many messages each.
		q := c.Vocab[10+r.IntN(990)] + " " + c.Vocab[10+r.IntN(990)]
		t0 := time.Now()
		res, err := x.Search(ctx, "t", search.Query{Q: q, Limit: 50})
		lat = append(lat, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		hits += len(res.Hits)
	}
	queryCPU := cpuTime() - cpu0
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(float64(n)/indexing.Seconds(), "docs/s")
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(float64(size)/float64(n), "index-bytes/doc")
	b.ReportMetric(float64(hits)/float64(len(lat)), "hits/query")
	b.ReportMetric(float64(n)/indexingCPU.Seconds(), "docs/cpu-s")
	b.ReportMetric(ms(queryCPU)/float64(len(lat)), "cpu-ms/query")
}

// cpuTime is the CPU time this process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
