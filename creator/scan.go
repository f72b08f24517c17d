package creator

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"svc.dev/svc/id"
	"svc.dev/svc/mail"
)

// ScanInput is what `svc creator scan` reads: a statements directory and mailboxes.
type ScanInput struct {
	// Statements is a directory of CSV statements (any depth, read in name order); files named
	// terms*.csv or contract*.csv hold published or contracted terms (ParseTerms).
	Statements string
	// Mail are mbox files, Maildirs, message files or directories of them (mail.Walk).
	Mail []string
	// AsOf is the moment the scan speaks for (default now); messages dated after it are ignored.
	AsOf time.Time
	// Home is the creator's home currency (default USD).
	Home string
	// Self are the creator's own addresses or domains; when empty, the address most messages
	// were sent to.
	Self []string
}

// ScanSource is a source as the scan prints it.
type ScanSource struct {
	ID     string `json:"id"`
	Kind   Kind   `json:"kind"`
	Label  string `json:"label"`
	Domain string `json:"domain"`
	// Stream is the platform or sponsor key the source's items are reconciled under.
	Stream string `json:"-"`
}

// ScanResult is what a scan found, in the shape `svc creator scan --json` prints.
type ScanResult struct {
	AsOf      time.Time    `json:"asOf"`
	Sources   []ScanSource `json:"sources"`
	Items     []*Item      `json:"items"`
	Anomalies []*Anomaly   `json:"anomalies"`
	// Problems are the files, rows and messages that could not be used, and why.
	Problems []string `json:"-"`
}

// Scan runs the whole pipeline with no server: it reads the statements and the mail, makes one
// source per platform or sponsor found (kind statement when statements report it, else inbox),
// and reconciles. A refused statement is listed in Problems and changes nothing else.
func Scan(ctx context.Context, in ScanInput) (*ScanResult, error) {
	if in.AsOf.IsZero() {
		in.AsOf = time.Now().UTC()
	}
	led := &Ledger{}
	if in.Statements != "" {
		if err := readStatements(ctx, in.Statements, led); err != nil {
			return nil, err
		}
	}
	var docs []*mail.Document
	for _, p := range in.Mail {
		err := mail.Walk(p, func(ref string, r io.Reader, err error) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err != nil {
				led.Problems = append(led.Problems, fmt.Sprintf("%s: %v", ref, err))
				return nil
			}
			d, err := mail.ReadDocument(r, nil)
			if err != nil {
				return nil // nothing readable: not revenue evidence
			}
			if !d.Date.IsZero() && d.Date.After(in.AsOf) {
				return nil
			}
			docs = append(docs, d)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read mail %s: %w", p, err)
		}
	}
	self := in.Self
	if len(self) == 0 {
		if s := mostAddressed(docs); s != "" {
			self = []string{s}
		}
	}
	led.Add(ReadInbox(docs, InboxOptions{Home: in.Home, Self: self}))
	sources := AssignScanSources(led)
	res := Reconcile(led, Options{AsOf: in.AsOf, Home: in.Home})
	return &ScanResult{AsOf: in.AsOf, Sources: sources, Items: res.Items, Anomalies: res.Anomalies, Problems: led.Problems}, nil
}

// AssignScanSources gives every stream of a ledger its own source, with an id derived from
// the stream's key (the same platform gets the same crs_ id in every scan), and points the
// evidence at it.
func AssignScanSources(led *Ledger) []ScanSource {
	stmt := map[string]bool{}
	for _, a := range led.Activity {
		if a.Evidence.Kind == EvidenceStatement || a.Evidence.Kind == EvidenceAPI {
			stmt[a.Stream] = true
		}
	}
	keys := make([]string, 0, len(led.Streams))
	for k := range led.Streams {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []ScanSource
	for _, k := range keys {
		s := led.Streams[k]
		s.SourceID = id.Derive("crs", time.Time{}, "scan/"+k)
		s.Kind = KindInbox
		if stmt[k] {
			s.Kind = KindStatement
		}
		out = append(out, ScanSource{ID: s.SourceID, Kind: s.Kind, Label: s.Name, Domain: s.Domain, Stream: k})
	}
	src := func(stream string) string {
		if s := led.Streams[stream]; s != nil {
			return s.SourceID
		}
		return ""
	}
	for i := range led.Activity {
		led.Activity[i].Evidence.SourceID = src(led.Activity[i].Stream)
	}
	for i := range led.Payouts {
		led.Payouts[i].Evidence.SourceID = src(led.Payouts[i].Stream)
	}
	for i := range led.Terms {
		led.Terms[i].Evidence.SourceID = src(led.Terms[i].Stream)
	}
	for i := range led.Invoices {
		for j := range led.Invoices[i].Evidence {
			led.Invoices[i].Evidence[j].SourceID = src(led.Invoices[i].Sponsor)
		}
	}
	for i := range led.Remittances {
		led.Remittances[i].Evidence.SourceID = src(led.Remittances[i].Sponsor)
	}
	return out
}

// mostAddressed is the address most messages were sent to: the mailbox's owner.
func mostAddressed(docs []*mail.Document) string {
	n := map[string]int{}
	for _, d := range docs {
		for _, a := range d.To {
			n[strings.ToLower(a.Addr)]++
		}
	}
	best, bn := "", 0
	for a, c := range n {
		if c > bn || (c == bn && a < best) {
			best, bn = a, c
		}
	}
	return best
}

// isTermsFile reports whether a statements-directory file holds terms rather than activity.
func isTermsFile(name string) bool {
	b := strings.ToLower(filepath.Base(name))
	return strings.HasPrefix(b, "terms") || strings.HasPrefix(b, "contract")
}

func readStatements(ctx context.Context, dir string, led *Ledger) error {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		ext := strings.ToLower(filepath.Ext(p))
		if !strings.HasPrefix(d.Name(), ".") && (ext == ".csv" || ext == ".tsv" || ext == ".txt") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read statements %s: %w", dir, err)
	}
	sort.Strings(files)
	known := map[string]string{}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, f)
		rel = filepath.ToSlash(rel)
		fh, err := os.Open(f)
		if err != nil {
			led.Problems = append(led.Problems, fmt.Sprintf("%s: %v", rel, err))
			continue
		}
		var observed time.Time
		if fi, err := fh.Stat(); err == nil {
			observed = fi.ModTime().UTC()
		}
		opts := StatementOptions{Path: rel, Known: known, ObservedAt: observed}
		if isTermsFile(rel) {
			ts, err := ParseTerms(fh, opts)
			fh.Close()
			if err != nil {
				led.Problems = append(led.Problems, err.Error())
				continue
			}
			led.Terms = append(led.Terms, ts...)
			continue
		}
		l, err := ParseStatement(fh, opts)
		fh.Close()
		if err != nil {
			led.Problems = append(led.Problems, err.Error())
			continue
		}
		for _, a := range l.Activity {
			known[a.Stream] = a.Currency
		}
		led.Add(l)
	}
	return nil
}
