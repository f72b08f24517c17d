package svc_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/internal/spamdtest"
	"svc.dev/svc/plan/spamc"
	"svc.dev/svc/providers"
)

// gtube is SpamAssassin's test string: every spamd scores a message holding it as spam.
const gtube = "XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X"

// The hosted planner asks a real spamd (Options.JunkFilter, svc serve --spamd) about every
// listed message: its verdict and score join the reason of a stranger's spam, which becomes
// removable; spam from someone the owner wrote to stays review (conversation evidence wins);
// without the filter the same stranger's message is review.
func TestPlanAsksTheJunkFilter(t *testing.T) {
	addr := spamdtest.Start(t)
	ctx := context.Background()
	dir := t.TempDir()
	for _, sub := range []string{"cur", "new", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, "INBOX", sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	msgs := map[string]string{
		"1.mine":  "From: Me <me@home.example>\r\nTo: Bob <bob@friend.example>\r\nSubject: lunch\r\nMessage-ID: <1@home.example>\r\nDate: Mon, 02 Nov 2026 10:00:00 +0000\r\n\r\nFriday?\r\n",
		"2.bob":   "From: Bob <bob@friend.example>\r\nTo: me@home.example\r\nSubject: look\r\nMessage-ID: <2@friend.example>\r\nDate: Tue, 03 Nov 2026 10:00:00 +0000\r\n\r\n" + gtube + "\r\n",
		"3.carol": "From: Carol <carol@far.example>\r\nTo: me@home.example\r\nSubject: hello\r\nMessage-ID: <3@far.example>\r\nDate: Tue, 03 Nov 2026 11:00:00 +0000\r\n\r\n" + gtube + "\r\n",
	}
	for name, raw := range msgs {
		if err := os.WriteFile(filepath.Join(dir, "INBOX", "cur", name+":2,S"), []byte(raw), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	classes := func(filter spamc.Checker) map[string]string {
		sv, err := svc.OpenMemory(ctx, &svc.Options{JunkFilter: filter})
		if err != nil {
			t.Fatal(err)
		}
		defer sv.Close()
		src, err := sv.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": dir}, Kind: "mail",
			Email: "me@home.example"})
		if err != nil {
			t.Fatal(err)
		}
		p, err := sv.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{src.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_SVC})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, o := range p.GetObjects() {
			got[strings.TrimSuffix(filepath.Base(o.ProviderObjectId), ":2,S")] = o.StorageClass.String() + ": " + o.StorageClassReason
		}
		return got
	}
	check := func(got map[string]string, want map[string]string) {
		t.Helper()
		for id, w := range want {
			if !strings.HasPrefix(got[id], w) {
				t.Errorf("%s: %q, want %q", id, got[id], w)
			}
		}
	}
	check(classes(&spamc.Client{Addr: addr}), map[string]string{
		"3.carol": "STORAGE_CLASS_LIKELY_REMOVABLE: junk: a spam filter marked it (spamd: ",
		"2.bob":   "STORAGE_CLASS_REVIEW: review: a spam filter marked it (spamd: ",
		"1.mine":  "STORAGE_CLASS_PROTECTED_BY_RULE: conversation: you sent it",
	})
	check(classes(nil), map[string]string{"3.carol": "STORAGE_CLASS_REVIEW: review: looks like a person's mail"})
	// A filter that cannot be reached changes nothing and fails nothing.
	check(classes(&spamc.Client{Addr: "127.0.0.1:1"}), map[string]string{"3.carol": "STORAGE_CLASS_REVIEW: review: looks like a person's mail"})
}
