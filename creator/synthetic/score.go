package synthetic

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"svc.dev/svc/creator"
)

// KindScore counts one anomaly kind's matches.
type KindScore struct {
	TP, FP, FN int
}

// Precision is TP/(TP+FP), 1 when nothing was found.
func (k KindScore) Precision() float64 {
	if k.TP+k.FP == 0 {
		return 1
	}
	return float64(k.TP) / float64(k.TP+k.FP)
}

// Recall is TP/(TP+FN), 1 when nothing was planted.
func (k KindScore) Recall() float64 {
	if k.TP+k.FN == 0 {
		return 1
	}
	return float64(k.TP) / float64(k.TP+k.FN)
}

// FieldScore counts exact-cents matches of one item amount over the items where the truth or
// the scan has a value.
type FieldScore struct{ Exact, Total int }

// Accuracy is Exact/Total.
func (f FieldScore) Accuracy() float64 {
	if f.Total == 0 {
		return 1
	}
	return float64(f.Exact) / float64(f.Total)
}

// Score is a scan measured against the truth.
type Score struct {
	Worlds   int
	Kinds    map[string]*KindScore
	Expected FieldScore
	Reported FieldScore
	Settled  FieldScore
	Variance FieldScore
	// MissingItems are truth items the scan has no item for; Errors describe mismatches (a few).
	MissingItems int
	Errors       []string
}

// NewScore returns an empty score.
func NewScore() *Score {
	s := &Score{Kinds: map[string]*KindScore{}}
	for _, k := range creator.AnomalyKinds {
		s.Kinds[string(k)] = &KindScore{}
	}
	return s
}

// Add measures one scan of one world.
func (s *Score) Add(w *World, res *creator.ScanResult) {
	s.Worlds++
	stream := map[string]string{}
	for _, src := range res.Sources {
		stream[src.ID] = src.Stream
	}
	found := map[string]bool{}
	for _, a := range res.Anomalies {
		if a.Status == creator.StatusDismissed {
			continue
		}
		found[string(a.Kind)+"|"+stream[a.CreatorSourceID]+"|"+a.Period] = true
	}
	truth := map[string]bool{}
	for _, l := range w.Truth.Anomalies {
		truth[l.Kind+"|"+l.Stream+"|"+l.Period] = true
	}
	for k := range truth {
		kind := strings.SplitN(k, "|", 2)[0]
		if found[k] {
			s.Kinds[kind].TP++
		} else {
			s.Kinds[kind].FN++
			s.note("seed %d: missed %s", w.Seed, k)
		}
	}
	for k := range found {
		if !truth[k] {
			kind := strings.SplitN(k, "|", 2)[0]
			if s.Kinds[kind] == nil {
				s.Kinds[kind] = &KindScore{}
			}
			s.Kinds[kind].FP++
			s.note("seed %d: false %s", w.Seed, k)
		}
	}
	items := map[string]*creator.Item{}
	for _, it := range res.Items {
		key := stream[it.CreatorSourceID] + "/" + it.Period.Label
		if it.Invoice != "" {
			key = stream[it.CreatorSourceID] + "/invoice:" + it.Invoice
		}
		items[key] = it
	}
	keys := make([]string, 0, len(w.Truth.Items))
	for k := range w.Truth.Items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c := w.Truth.Items[k]
		it := items[k]
		if it == nil {
			if c.Reported != nil || c.Settled != nil {
				s.MissingItems++
				s.note("seed %d: no item %s", w.Seed, k)
			}
			it = &creator.Item{}
		}
		s.field(&s.Expected, w.Seed, k, "expected", c.Expected, it.ExpectedCents)
		s.field(&s.Reported, w.Seed, k, "reported", c.Reported, it.ReportedCents)
		s.field(&s.Settled, w.Seed, k, "settled", c.Settled, it.SettledCents)
		s.field(&s.Variance, w.Seed, k, "variance", c.Variance, it.VarianceCents)
	}
}

func (s *Score) note(format string, args ...any) {
	if len(s.Errors) < 200 {
		s.Errors = append(s.Errors, fmt.Sprintf(format, args...))
	}
}

func (s *Score) field(f *FieldScore, seed uint64, key, name string, want, got *int64) {
	if want == nil && got == nil {
		return
	}
	f.Total++
	if want != nil && got != nil && *want == *got {
		f.Exact++
		return
	}
	str := func(p *int64) string {
		if p == nil {
			return "null"
		}
		return fmt.Sprint(*p)
	}
	s.note("seed %d: %s %s: want %s, got %s", seed, key, name, str(want), str(got))
}

// Print writes the score as a table.
func (s *Score) Print(w io.Writer) {
	fmt.Fprintf(w, "synthetic creators: %d\n\n%-34s %6s %6s %6s %10s %8s\n", s.Worlds, "anomaly kind", "TP", "FP", "FN", "precision", "recall")
	var tp, fp, fn int
	for _, k := range creator.AnomalyKinds {
		ks := s.Kinds[string(k)]
		tp, fp, fn = tp+ks.TP, fp+ks.FP, fn+ks.FN
		fmt.Fprintf(w, "%-34s %6d %6d %6d %10.3f %8.3f\n", k, ks.TP, ks.FP, ks.FN, ks.Precision(), ks.Recall())
	}
	all := KindScore{TP: tp, FP: fp, FN: fn}
	fmt.Fprintf(w, "%-34s %6d %6d %6d %10.3f %8.3f\n\n", "all kinds", tp, fp, fn, all.Precision(), all.Recall())
	fmt.Fprintf(w, "%-10s %8s %8s %9s\n", "amount", "exact", "total", "accuracy")
	for _, f := range []struct {
		n string
		s FieldScore
	}{{"expected", s.Expected}, {"reported", s.Reported}, {"settled", s.Settled}, {"variance", s.Variance}} {
		fmt.Fprintf(w, "%-10s %8d %8d %9.3f\n", f.n, f.s.Exact, f.s.Total, f.s.Accuracy())
	}
	fmt.Fprintf(w, "\ntruth items without an item: %d\n", s.MissingItems)
}

// Run generates the worlds of seeds first..first+n-1, writes each under a temporary directory,
// scans it as `svc creator scan` would (its mail as an mbox for even seeds, as a Maildir for odd
// ones) and scores the scan.
func Run(ctx context.Context, first uint64, n int) (*Score, error) {
	s := NewScore()
	for seed := first; seed < first+uint64(n); seed++ {
		w := Generate(seed)
		dir, err := os.MkdirTemp("", "creator-synthetic-")
		if err != nil {
			return nil, err
		}
		err = w.Write(dir)
		if err == nil {
			var res *creator.ScanResult
			box := filepath.Join(dir, "mail.mbox")
			if seed%2 == 1 {
				box = filepath.Join(dir, "maildir")
			}
			res, err = creator.Scan(ctx, creator.ScanInput{Statements: filepath.Join(dir, "statements"), Mail: []string{box}, AsOf: w.AsOf})
			if err == nil {
				s.Add(w, res)
			}
		}
		os.RemoveAll(dir)
		if err != nil {
			return nil, fmt.Errorf("seed %d: %w", seed, err)
		}
	}
	return s, nil
}
