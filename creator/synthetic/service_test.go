package synthetic

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"testing"

	"svc.dev/svc/creator"
	"svc.dev/svc/mail"
)

type worldMail struct{ docs []*mail.Document }

func (w worldMail) Messages(context.Context, string) ([]*mail.Document, error) { return w.docs, nil }

// The service path (a statement source with the uploads, an inbox source over the mail, the
// reconcile job) reconciles the same amounts as the scan of the same files.
func TestServiceMatchesScan(t *testing.T) {
	ctx := context.Background()
	w := Generate(7)
	dir := t.TempDir()
	if err := w.Write(dir); err != nil {
		t.Fatal(err)
	}
	scan, err := creator.Scan(ctx, creator.ScanInput{Statements: filepath.Join(dir, "statements"), Mail: []string{filepath.Join(dir, "mail.mbox")}, AsOf: w.AsOf})
	if err != nil {
		t.Fatal(err)
	}
	var docs []*mail.Document
	for _, m := range w.Mail {
		d, err := mail.ReadDocument(bytes.NewReader(m), nil)
		if err == nil && !d.Date.After(w.AsOf) {
			docs = append(docs, d)
		}
	}
	st := creator.NewMemStore()
	svc := &creator.Service{Deps: creator.Deps{Mail: worldMail{docs}}}
	stmts, err := svc.CreateSource(ctx, st, creator.CreateRequest{Kind: creator.KindStatement, Label: "Statements"})
	if err != nil {
		t.Fatal(err)
	}
	inbox, err := svc.CreateSource(ctx, st, creator.CreateRequest{Kind: creator.KindInbox, SourceID: "src_01JD0000000000000000000000"})
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(w.Files))
	for n := range w.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := svc.UploadStatement(ctx, st, stmts.ID, n, w.Files[n]); err != nil {
			t.Fatalf("upload %s: %v", n, err)
		}
	}
	rep, err := svc.Reconcile(ctx, st, w.AsOf, nil)
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("reconcile: %v %v", err, rep.Problems)
	}
	key := func(it *creator.Item) string {
		s := func(p *int64) string {
			if p == nil {
				return "-"
			}
			return fmt.Sprint(*p)
		}
		return fmt.Sprintf("%s %s %s %s %s %s", it.Period.Label, it.Invoice, s(it.ExpectedCents), s(it.ReportedCents), s(it.SettledCents), it.State)
	}
	count := func(its []*creator.Item) map[string]int {
		m := map[string]int{}
		for _, it := range its {
			m[key(it)]++
		}
		return m
	}
	a, b := count(scan.Items), count(rep.Result.Items)
	if len(scan.Items) != len(rep.Result.Items) || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("scan and service differ:\n%v\n%v", a, b)
	}
	owners := map[string]int{}
	for _, it := range rep.Result.Items {
		owners[it.CreatorSourceID]++
	}
	if owners[stmts.ID] == 0 || owners[inbox.ID] == 0 || len(owners) != 2 {
		t.Fatalf("owners %v: platform items belong to the statement source, sponsor items to the inbox", owners)
	}
	if len(rep.Opened) != len(scan.Anomalies) {
		t.Fatalf("%d anomalies opened, the scan found %d", len(rep.Opened), len(scan.Anomalies))
	}
}
