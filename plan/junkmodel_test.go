package plan_test

import (
	"fmt"
	"strings"
	"testing"

	"svc.dev/svc/mail"
	"svc.dev/svc/plan"
)

// mailboxMsg is a message of the model's test mailbox.
func mailboxMsg(id, folder, from, to, subject, text string) plan.Object {
	return plan.Object{ID: id, Version: "v1", Kind: "message", SizeBytes: 4000, Containers: []string{folder}, From: from,
		To: []string{to}, Subject: subject, Snippet: text, CreatedAt: now.AddDate(0, -2, 0), ModifiedAt: now.AddDate(0, -2, 0),
		Facts: map[string]string{mail.FactMessageID: id + "@mail.example"}}
}

// The per-mailbox model learns this mailbox's junk (its Junk folder) and kept mail (its sent
// mail): a stranger's message like the junk becomes removable with the model's reason; one like
// the kept mail stays review; the same junk from someone the owner wrote to, or reading as a
// receipt, is never removable; and without enough junk to learn from, nothing changes.
func TestTheMailboxModelLearnsItsOwnJunk(t *testing.T) {
	spam := []string{"replica", "watches", "rolex", "luxury", "discount", "cheap", "genuine", "swiss", "offer", "limited"}
	kept := []string{"meeting", "agenda", "budget", "draft", "review", "thursday", "notes", "project", "minutes", "slides"}
	text := func(words []string, i int) string {
		var b strings.Builder
		for j := range 8 {
			b.WriteString(words[(i+j*3)%len(words)] + " ")
		}
		return b.String()
	}
	mailbox := func(junk int) []plan.Object {
		var objs []plan.Object
		for i := range junk {
			objs = append(objs, mailboxMsg(fmt.Sprintf("junk-%d", i), "Junk", fmt.Sprintf("Seller %d <s%d@shop%d.example>", i, i, i), "me@home.example",
				"Re: "+text(spam, i)[:20], text(spam, i)))
		}
		for i := range 40 {
			objs = append(objs, mailboxMsg(fmt.Sprintf("sent-%d", i), "Sent", "Me <me@home.example>", fmt.Sprintf("colleague%d@work.example", i%5),
				"Re: "+text(kept, i)[:20], text(kept, i)))
		}
		return append(objs,
			mailboxMsg("stranger-junk", "INBOX", "Zed <zed@far.example>", "me@home.example", "hello", text(spam, 1)),
			mailboxMsg("stranger-kept", "INBOX", "Yan <yan@far2.example>", "me@home.example", "hello", text(kept, 1)),
			mailboxMsg("colleague-junk", "INBOX", "C <colleague1@work.example>", "me@home.example", "hello", text(spam, 2)),
			mailboxMsg("receipt-junk", "INBOX", "Xu <xu@far3.example>", "me@home.example", "Your order receipt", text(spam, 3)))
	}
	classes := func(objs []plan.Object) map[string]string {
		got := map[string]string{}
		for _, o := range build(t, request(nil, objs...)).Objects {
			got[o.ProviderObjectId] = o.StorageClass.String() + ": " + o.StorageClassReason
		}
		return got
	}
	got := classes(mailbox(40))
	for id, want := range map[string]string{
		"stranger-junk":  "STORAGE_CLASS_LIKELY_REMOVABLE: junk: like the junk in this mailbox (score ",
		"stranger-kept":  "STORAGE_CLASS_REVIEW: ",
		"colleague-junk": "STORAGE_CLASS_PROTECTED_BY_RULE: conversation: from someone you have written to",
		"receipt-junk":   "STORAGE_CLASS_PRESERVE: ",
	} {
		if !strings.HasPrefix(got[id], want) {
			t.Errorf("%s: %q, want %q", id, got[id], want)
		}
	}
	if !strings.Contains(got["stranger-junk"], "learned from 40 junk messages and 41 messages you keep") {
		t.Errorf("the reason does not say what the model learned from: %q", got["stranger-junk"])
	}
	// (41: the receipt is kept mail too.) Ten junk messages are too few to learn from: the stranger's mail stays review.
	if got := classes(mailbox(10))["stranger-junk"]; !strings.HasPrefix(got, "STORAGE_CLASS_REVIEW") {
		t.Errorf("with 10 junk examples: %q, want review", got)
	}
}
