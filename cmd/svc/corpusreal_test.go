package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"svc.dev/svc/internal/corpus"
)

// svc corpus bench --labels measures any labelled Maildir tree: here the generated corpus with
// its own labels, where nothing with conversation evidence may be removable and the junk the
// corpus files in its Junk folder is.
func TestRealBenchOnALabelledMaildir(t *testing.T) {
	dir := t.TempDir()
	msgs, err := corpus.WriteMaildir(filepath.Join(dir, "mail"), corpus.Generate(5, 300, corpusEpoch))
	if err != nil {
		t.Fatal(err)
	}
	var labels bytes.Buffer
	fmt.Fprintln(&labels, "# id, label, source")
	for id, m := range msgs {
		label := string(m.Label)
		if m.Label == corpus.Conversation {
			label = "discussion"
		}
		fmt.Fprintf(&labels, "%s\t%s\tgenerated\n", id, label)
	}
	file := filepath.Join(dir, "labels.tsv")
	if err := os.WriteFile(file, labels.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runRealBench(context.Background(), &out, file, filepath.Join(dir, "mail"), 5, ""); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"== default policy", "== removePromotional", "generated  discussion", "generated  junk",
		"most common reasons", "planning / listing"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "conversation-evidence messages removable (duplicates of a kept copy aside): 0  = 0 MET"); n != 2 {
		t.Errorf("conversation-evidence removable in %d of 2 plans is 0:\n%s", n, got)
	}
	// The discussion line of each plan, with its share and verdict.
	line := regexp.MustCompile(`generated\s+discussion\s+\d+\s+\d+\s+[0-9.]+%\s+<= 5% MET`)
	if n := len(line.FindAllString(got, -1)); n != 2 {
		t.Errorf("discussion within its target in %d of 2 plans:\n%s", n, got)
	}
}

func TestReadLabels(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.tsv")
	os.WriteFile(good, []byte("# comment\n\nbox/INBOX/1\tjunk\nlists.mbox#0\tdiscussion\nx/y\tham\tmine\n"), 0o600)
	got, err := readLabels(good)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{"box/INBOX/1": {"junk", "box"}, "lists.mbox#0": {"discussion", "lists.mbox"}, "x/y": {"ham", "mine"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("labels %v, want %v", got, want)
	}
	bad := filepath.Join(dir, "bad.tsv")
	os.WriteFile(bad, []byte("box/INBOX/1 junk\n"), 0o600)
	if _, err := readLabels(bad); err == nil || !strings.Contains(err.Error(), "bad.tsv:1") {
		t.Errorf("a line without a tab: %v", err)
	}
}
