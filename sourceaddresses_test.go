package svc_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/providers"
)

// A source's email is the account's own address: mail from it is the owner's, so its recipients
// are correspondents, even in a mailbox with no sent folder.
func TestPlanKnowsTheAccountsAddress(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, sub := range []string{"cur", "new", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, "INBOX", sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	msgs := map[string]string{
		"1.mine":  "From: Me <me@home.example>\r\nTo: Bob <bob@friend.example>\r\nSubject: lunch\r\nMessage-ID: <1@home.example>\r\nDate: Mon, 02 Nov 2026 10:00:00 +0000\r\n\r\nFriday?\r\n",
		"2.bob":   "From: Bob <bob@friend.example>\r\nTo: me@home.example\r\nSubject: photos\r\nMessage-ID: <2@friend.example>\r\nDate: Tue, 03 Nov 2026 10:00:00 +0000\r\n\r\nHere they are.\r\n",
		"3.carol": "From: Carol <carol@far.example>\r\nTo: me@home.example\r\nSubject: photos\r\nMessage-ID: <3@far.example>\r\nDate: Tue, 03 Nov 2026 11:00:00 +0000\r\n\r\nHello.\r\n",
	}
	for name, raw := range msgs {
		if err := os.WriteFile(filepath.Join(dir, "INBOX", "cur", name+":2,S"), []byte(raw), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sv, err := svc.OpenMemory(ctx, nil)
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
	for id, want := range map[string]string{
		"1.mine":  "STORAGE_CLASS_PROTECTED_BY_RULE: conversation: you sent it",
		"2.bob":   "STORAGE_CLASS_PROTECTED_BY_RULE: conversation: from someone you have written to",
		"3.carol": "STORAGE_CLASS_REVIEW: review: looks like a person's mail",
	} {
		if !strings.HasPrefix(got[id], want) {
			t.Errorf("%s: %q, want %q (all: %v)", id, got[id], want, got)
		}
	}
}
