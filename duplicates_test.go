package svc_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/providers"
)

// maildir makes a Maildir tree with the given folder/name -> message files.
func maildir(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, raw := range files {
		dir, file := filepath.Split(name)
		for _, sub := range []string{"cur", "new", "tmp"} {
			if err := os.MkdirAll(filepath.Join(root, dir, sub), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(root, dir, "cur", file+":2,S"), []byte(raw), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// Real mail delivered twice, through the local mail provider: the same message (Message-ID and
// sender) in INBOX and, with another Received line and a list's footer, in a second source's
// Archive, and the same bytes in two folders, are duplicates under the policy's
// duplicateHandling: one copy kept (the newest or the oldest), the others duplicate; with
// review, every copy is review (issue 22, item 5).
func TestDuplicatesOfRealMailAcrossFoldersAndSources(t *testing.T) {
	ctx := context.Background()
	const head = "From: Ann Example <ann@lists.example>\r\nTo: dev@lists.example\r\nSubject: release notes draft\r\n" +
		"Message-ID: <CAF1234@mail.lists.example>\r\nList-Id: Dev <dev.lists.example>\r\nList-Post: <mailto:dev@lists.example>\r\n"
	first := "Received: from mail.lists.example (mail.lists.example [192.0.2.10]) by mx.home.example; Mon, 2 Nov 2026 10:00:05 +0000\r\n" +
		head + "Date: Mon, 02 Nov 2026 10:00:00 +0000\r\n\r\nHere is the draft.\r\n"
	second := "Received: from relay.other.example (relay.other.example [192.0.2.20]) by mx2.home.example; Mon, 2 Nov 2026 10:07:00 +0000\r\n" +
		head + "Date: Mon, 02 Nov 2026 10:00:00 +0000\r\n\r\nHere is the draft.\r\n-- \r\ndev mailing list\r\n"
	receipt := "From: Shop <orders@shop.example>\r\nTo: me@home.example\r\nSubject: Your order receipt #1234\r\n" +
		"Message-ID: <r1234@shop.example>\r\nDate: Tue, 03 Nov 2026 09:00:00 +0000\r\n\r\nOrder total: $12.00\r\n"
	a := maildir(t, map[string]string{"INBOX/1.first": first, "INBOX/3.receipt": receipt, "Receipts/4.receipt": receipt})
	b := maildir(t, map[string]string{"Archive/2.second": second})
	// The second copy arrived later.
	os.Chtimes(filepath.Join(a, "INBOX", "cur", "1.first:2,S"), mustTime(t, "2026-11-02T10:00:05Z"), mustTime(t, "2026-11-02T10:00:05Z"))
	os.Chtimes(filepath.Join(b, "Archive", "cur", "2.second:2,S"), mustTime(t, "2026-11-02T10:07:00Z"), mustTime(t, "2026-11-02T10:07:00Z"))

	sv, err := svc.OpenMemory(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	var ids []string
	for _, root := range []string{a, b} {
		src, err := sv.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": root}, Kind: "mail",
			Email: "me@home.example"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, src.Id)
	}
	classes := func(h svcv1.DuplicateHandling) map[string]string {
		p, err := sv.BuildPlan(ctx, svc.PlanRequest{SourceIDs: ids, Intent: svcv1.PlanIntent_PLAN_INTENT_SVC,
			Policy: &svcv1.SourcePolicy{DuplicateHandling: h.Enum()}})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, o := range p.GetObjects() {
			got[strings.TrimSuffix(filepath.Base(o.ProviderObjectId), ":2,S")] = strings.TrimPrefix(o.StorageClass.String(), "STORAGE_CLASS_") + ": " + o.StorageClassReason
		}
		return got
	}
	check := func(h svcv1.DuplicateHandling, want map[string]string) {
		t.Helper()
		got := classes(h)
		for id, w := range want {
			if !strings.HasPrefix(got[id], w) {
				t.Errorf("%v %s: %q, want %q", h, id, got[id], w)
			}
		}
	}
	const dup = "DUPLICATE: another copy of the same message (Message-ID) is kept"
	check(svcv1.DuplicateHandling_DUPLICATE_HANDLING_KEEP_NEWEST, map[string]string{
		"1.first": dup, "2.second": "PROTECTED_BY_RULE: conversation: a discussion list you receive",
		// Transactional mail keeps every copy: a record is never removed as a duplicate.
		"3.receipt": "PRESERVE", "4.receipt": "PRESERVE"})
	check(svcv1.DuplicateHandling_DUPLICATE_HANDLING_KEEP_OLDEST, map[string]string{
		"2.second": dup, "1.first": "PROTECTED_BY_RULE: conversation: a discussion list you receive"})
	check(svcv1.DuplicateHandling_DUPLICATE_HANDLING_REVIEW, map[string]string{
		"1.first": "REVIEW: one of several copies", "2.second": "REVIEW: one of several copies"})
}

// The simulated mailbox holds messages delivered twice (the second copy also filed in Archive):
// a plan over it shows them as duplicates of a kept copy.
func TestSimulatedMailboxShowsDuplicates(t *testing.T) {
	ctx := context.Background()
	sv, err := svc.OpenMemory(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	src, err := sv.ConnectSource(ctx, svc.SourceSpec{Provider: providers.Simulated, SourceRef: "mail/dups", Kind: "mail",
		Config: providers.Config{"seed": "7", "objects": "400"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := sv.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{src.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_SVC})
	if err != nil {
		t.Fatal(err)
	}
	dups := 0
	for _, o := range p.GetObjects() {
		if o.StorageClass == svcv1.StorageClass_STORAGE_CLASS_DUPLICATE {
			dups++
			if !strings.HasPrefix(o.StorageClassReason, "another copy of the same") {
				t.Errorf("%s: duplicate for %q", o.ProviderObjectId, o.StorageClassReason)
			}
		}
	}
	if dups == 0 {
		t.Errorf("no duplicates in a simulated mailbox of %d objects", len(p.GetObjects()))
	}
	t.Logf("%d duplicates of %d objects", dups, len(p.GetObjects()))
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
