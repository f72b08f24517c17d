package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"svc.dev/svc/creator/synthetic"
)

// svc creator scan prints the spec's fields with no server: sources {id, kind, label, domain},
// items with creator_source_id and period.label, statement refs "<path>#L<n>", anomalies.
func TestCreatorScanJSON(t *testing.T) {
	dir := t.TempDir()
	w := synthetic.Generate(3)
	if err := w.Write(dir); err != nil {
		t.Fatal(err)
	}
	// A bad statement next to the good ones is reported, and changes nothing else.
	os.WriteFile(filepath.Join(dir, "statements", "broken.csv"), []byte("Period,Gross,Net\n2026-03,-1.00,0\n"), 0o644)
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"creator", "scan", "--statements", filepath.Join(dir, "statements"),
		"--mbox", filepath.Join(dir, "mail.mbox"), "--as-of", w.AsOf.Format("2006-01-02T15:04:05Z"), "--json"}, &out, &errb)
	if err != nil {
		t.Fatal(err, errb.String())
	}
	if !strings.Contains(errb.String(), "broken.csv") || !strings.Contains(errb.String(), "line 2: negative gross") {
		t.Fatalf("stderr: %s", errb.String())
	}
	var res struct {
		AsOf    string `json:"asOf"`
		Sources []map[string]any
		Items   []map[string]any
		Anoms   []map[string]any `json:"anomalies"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	json.Unmarshal(out.Bytes(), &top)
	if len(top) != 4 || res.AsOf == "" || len(res.Sources) < 6 || len(res.Items) < 60 || len(res.Anoms) == 0 {
		t.Fatalf("keys %d, %d sources, %d items, %d anomalies", len(top), len(res.Sources), len(res.Items), len(res.Anoms))
	}
	for _, s := range res.Sources {
		for _, k := range []string{"id", "kind", "label", "domain"} {
			if _, ok := s[k]; !ok {
				t.Fatalf("source without %s: %v", k, s)
			}
		}
	}
	ref := regexp.MustCompile(`^[^#]+\.csv#L[0-9]+$`)
	label := regexp.MustCompile(`^20[0-9]{2}-[01][0-9]$`)
	for _, it := range res.Items {
		if !strings.HasPrefix(it["creator_source_id"].(string), "crs_") || !strings.HasPrefix(it["id"].(string), "rev_") {
			t.Fatalf("item ids: %v", it)
		}
		if !label.MatchString(it["period"].(map[string]any)["label"].(string)) {
			t.Fatalf("period: %v", it["period"])
		}
		for _, e := range it["evidence"].([]any) {
			e := e.(map[string]any)
			if e["kind"] == "statement" && !ref.MatchString(e["ref"].(string)) {
				t.Fatalf("statement ref %q", e["ref"])
			}
		}
	}
	// Without --json: a summary per source.
	out.Reset()
	if err := run(context.Background(), []string{"creator", "scan", "--statements", filepath.Join(dir, "statements"),
		"--mbox", filepath.Join(dir, "mail.mbox"), "--as-of", w.AsOf.Format("2006-01-02T15:04:05Z")}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "PERIOD") || !strings.Contains(out.String(), "RECONCILED") {
		t.Fatalf("summary:\n%s", out.String())
	}
}
