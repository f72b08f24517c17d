package plan_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/mail"
	"svc.dev/svc/plan"
	"svc.dev/svc/plan/discover"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/simulated"
)

// message is a two-year-old message, cold by age, so that only what it is keeps it.
func message(from, subject string, facts map[string]string, mut func(*plan.Object)) plan.Object {
	o := obj(func(o *plan.Object) {
		o.From, o.Subject, o.Name, o.Facts = from, subject, subject, facts
		o.CreatedAt, o.ModifiedAt = now.AddDate(-2, 0, 0), now.AddDate(-2, 0, 0)
	})
	if mut != nil {
		mut(&o)
	}
	return o
}

func TestMailClasses(t *testing.T) {
	promo := &svcv1.SourcePolicy{RemovePromotional: proto.Bool(true)}
	for _, tc := range []struct {
		name   string
		o      plan.Object
		class  svcv1.StorageClass
		reason string // a substring of storageClassReason
		trash  bool
	}{
		{"a stranger's person-like mail is review, not a conversation nor cold", message("Maria Lopez <maria.lopez@example.net>", "Photos from Sunday", nil,
			func(o *plan.Object) { o.To = []string{"me@home.example"} }), svcv1.StorageClass_STORAGE_CLASS_REVIEW, "you never wrote to the sender", false},
		{"a stranger's large person-like mail is review", message("Maria Lopez <maria.lopez@example.net>", "Re: the scans", map[string]string{mail.FactInReplyTo: "x@y"},
			func(o *plan.Object) { o.SizeBytes, o.To = 30<<20, []string{"me@home.example"} }), svcv1.StorageClass_STORAGE_CLASS_REVIEW, "you never wrote", false},
		{"a stranger's mail with a forged identity is junk", message("Maria Lopez <maria.lopez@example.net>", "hello dear", map[string]string{
			mail.FactReturnPath: "bounce@mass-mailer.example", mail.FactReplyTo: "maria@other.example"}, nil),
			svcv1.StorageClass_STORAGE_CLASS_LIKELY_REMOVABLE, "from someone you never wrote to", true},
		{"a discussion list with List-Unsubscribe is a conversation", message("Dev <dev-bounces@lists.example.org>", "[dev] Re: release plan",
			map[string]string{mail.FactListPost: "<mailto:dev@lists.example.org>", mail.FactPrecedence: "list", mail.FactPlatform: "mailman"},
			func(o *plan.Object) {
				o.ListID, o.ListUnsubscribe = "Dev <dev.lists.example.org>", "<mailto:dev-request@lists.example.org?subject=unsubscribe>"
			}), svcv1.StorageClass_STORAGE_CLASS_PROTECTED_BY_RULE, "discussion list", false},
		{"an announce-only list is not a discussion", message("Announce <announce@lists.example.org>", "New release 2.0 is out. Don't miss the webinar",
			map[string]string{mail.FactListPost: "NO", mail.FactPrecedence: "bulk", mail.FactPlatform: "mailman"},
			func(o *plan.Object) {
				o.ListID, o.ListUnsubscribe = "<announce.lists.example.org>", "<https://lists.example.org/u>"
			}),
			svcv1.StorageClass_STORAGE_CLASS_PROMOTIONAL, "marketing", true},
		{"a code-host thread you can reply to", message("Ana <notifications@github.com>", "Re: [acme/app] Crash on start (#42)",
			map[string]string{mail.FactPlatform: "github", mail.FactReplyTo: "reply+ABC@reply.github.com", mail.FactPrecedence: "list"},
			func(o *plan.Object) {
				o.ListID, o.ListUnsubscribe = "acme/app <app.acme.github.com>", "<mailto:unsub+x@reply.github.com>"
			}),
			svcv1.StorageClass_STORAGE_CLASS_PROTECTED_BY_RULE, "github thread", false},
		{"a newsletter is promotional", message("Shop <news@shop.example>", "20% off this weekend",
			map[string]string{mail.FactPlatform: "mailchimp"}, func(o *plan.Object) {
				o.ListUnsubscribe, o.ListUnsubscribePost = "<https://shop.example/u>", true
			}), svcv1.StorageClass_STORAGE_CLASS_PROMOTIONAL, "sent through mailchimp", true},
		{"a receipt is preserved even with bulk headers", message("Shop <orders@shop.example>", "Your order #1234 has shipped",
			map[string]string{mail.FactPlatform: "sendgrid"}, func(o *plan.Object) { o.ListUnsubscribe = "<https://shop.example/u>" }),
			svcv1.StorageClass_STORAGE_CLASS_PRESERVE, "transactional", false},
		{"a security notice is preserved", message("Bank <no-reply@bank.example>", "New sign-in to your account", nil, nil),
			svcv1.StorageClass_STORAGE_CLASS_PRESERVE, "transactional", false},
		{"spam the provider filed is junk", message("Winner <x@y.example>", "hello", nil, func(o *plan.Object) { o.Containers = []string{"Mail/.Junk"} }),
			svcv1.StorageClass_STORAGE_CLASS_LIKELY_REMOVABLE, "filed it as spam (Mail/.Junk)", true},
		{"a spam filter's verdict is junk", message("a@b.example", "hi", map[string]string{mail.FactSpam: "X-Spam-Flag: YES"}, nil),
			svcv1.StorageClass_STORAGE_CLASS_LIKELY_REMOVABLE, "spam filter", true},
		{"spam a filter marked on a list you receive is review", message("x@y.example", "[dev] cheap pills",
			map[string]string{mail.FactSpam: "spamd: 11.4/5.0", mail.FactListPost: "<mailto:dev@lists.example.org>", mail.FactPlatform: "mailman"},
			func(o *plan.Object) { o.ListID = "Dev <dev.lists.example.org>" }),
			svcv1.StorageClass_STORAGE_CLASS_REVIEW, "a spam filter marked it (spamd: 11.4/5.0), but a discussion list you receive", false},
		{"spam marks without a verdict are junk", message("Claims Dept <claims@lottery-intl.example>", "YOU HAVE WON A PRIZE CLAIM NOW",
			map[string]string{mail.FactAuthFail: "dkim=fail", mail.FactReplyTo: "agent7@gmail.com"}, nil),
			svcv1.StorageClass_STORAGE_CLASS_LIKELY_REMOVABLE, "junk", true},
		{"phishing dressed as an invoice goes to review, not trash", message("Billing <billing@pay.example>", "Your invoice is overdue",
			map[string]string{mail.FactAuthFail: "spf=fail"}, nil), svcv1.StorageClass_STORAGE_CLASS_REVIEW, "review", false},
		{"an unreadable message is review with the reason", message("", "", map[string]string{mail.FactUnreadable: "empty"}, nil),
			svcv1.StorageClass_STORAGE_CLASS_REVIEW, "unreadable: empty", false},
		{"an automated notice falls to the general rules", message("CI <builds@ci.example>", "Build 812 passed",
			map[string]string{mail.FactAutoSubmit: "auto-generated"}, nil), svcv1.StorageClass_STORAGE_CLASS_COLD, "unmodified", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := build(t, request(promo, tc.o))
			if len(p.Objects) != 1 {
				t.Fatalf("objects %d, excluded %v", len(p.Objects), p.Excluded)
			}
			o := p.Objects[0]
			if o.StorageClass != tc.class || !strings.Contains(o.StorageClassReason, tc.reason) {
				t.Errorf("class %v (%q), want %v with %q", o.StorageClass, o.StorageClassReason, tc.class, tc.reason)
			}
			trashed := false
			for _, a := range o.Actions {
				trashed = trashed || a == svcv1.PlanAction_PLAN_ACTION_TRASH
			}
			if trashed != tc.trash {
				t.Errorf("actions %v, trash %v", o.Actions, tc.trash)
			}
		})
	}
}

// A thread the owner wrote in is kept whole: a newsletter-looking reply in it is a conversation,
// a junk-looking one goes to review, and the owner's own mail is kept.
func TestThreadsTheOwnerTookPartIn(t *testing.T) {
	mine := message("Me <me@home.example>", "Re: tickets", nil, func(o *plan.Object) {
		o.ID, o.Containers, o.ThreadID = "sent-1", []string{"Mail/.Sent"}, "<root@x>"
	})
	bulky := message("Events <events@club.example>", "Re: tickets", nil, func(o *plan.Object) {
		o.ID, o.ThreadID, o.ListUnsubscribe, o.ListUnsubscribePost = "in-1", "<root@x>", "<https://club.example/u>", true
	})
	spammy := message("x <x@y.example>", "Re: tickets", map[string]string{mail.FactSpam: "X-Spam-Flag: YES"}, func(o *plan.Object) {
		o.ID, o.ThreadID = "in-2", "<root@x>"
	})
	other := message("Events <events@club.example>", "Newsletter", nil, func(o *plan.Object) {
		o.ID, o.ThreadID, o.ListUnsubscribe, o.ListUnsubscribePost = "in-3", "<other@x>", "<https://club.example/u>", true
	})
	p := build(t, request(&svcv1.SourcePolicy{RemovePromotional: proto.Bool(true)}, mine, bulky, spammy, other))
	got := map[string]string{}
	for _, o := range p.Objects {
		got[o.ProviderObjectId] = o.StorageClass.String() + ": " + o.StorageClassReason
	}
	for id, want := range map[string]string{"sent-1": "PROTECTED_BY_RULE: conversation: you sent it",
		"in-1": "PROTECTED_BY_RULE: conversation: a thread you wrote in", "in-2": "REVIEW: review:", "in-3": "PROMOTIONAL: marketing"} {
		if !strings.Contains(got[id], want) {
			t.Errorf("%s: %q, want %q", id, got[id], want)
		}
	}
}

// Conversation is what the mailbox shows: mail from someone the owner wrote to (their sent To
// or Cc), a reply to the owner's message, and mail from the owner's own address are protected,
// however the sent mail is ordered in the listing; the same person-like mail from a stranger is
// review, and a stranger's junk-like mail is removable, while a correspondent's is only review.
func TestConversationNeedsMailboxEvidence(t *testing.T) {
	friend := message("Ann <ann@friend.example>", "lunch?", nil, func(o *plan.Object) { o.ID, o.To = "in-friend", []string{"me@home.example"} })
	reply := message("Bob <bob@else.example>", "Re: offer", map[string]string{mail.FactInReplyTo: "m1@home.example"}, func(o *plan.Object) {
		o.ID, o.ThreadID, o.To = "in-reply", "<m0@else.example>", []string{"me@home.example"}
	})
	stranger := message("Cat <cat@far.example>", "lunch?", nil, func(o *plan.Object) { o.ID, o.To = "in-stranger", []string{"me@home.example"} })
	forged := map[string]string{mail.FactReturnPath: "x@bulk.example", mail.FactReplyTo: "y@reply.example"}
	friendForged := message("Ann <ann@friend.example>", "hi", forged, func(o *plan.Object) { o.ID = "in-friend-forged" })
	strangerForged := message("Cat <cat@far.example>", "hi", forged, func(o *plan.Object) { o.ID = "in-stranger-forged" })
	sent := message("Me <me@home.example>", "offer", map[string]string{mail.FactMessageID: "m1@home.example"}, func(o *plan.Object) {
		o.ID, o.Containers, o.To, o.Cc = "sent-1", []string{"Sent"}, []string{"Bob <bob@else.example>"}, []string{"ann@friend.example"}
	})
	// The sent message is listed last: the evidence is weighed after the whole listing.
	p := build(t, request(&svcv1.SourcePolicy{RemovePromotional: proto.Bool(true)}, friend, reply, stranger, friendForged, strangerForged, sent))
	got := map[string]string{}
	for _, o := range p.Objects {
		got[o.ProviderObjectId] = o.StorageClass.String() + ": " + o.StorageClassReason
	}
	for id, want := range map[string]string{
		"in-friend":          "PROTECTED_BY_RULE: conversation: from someone you have written to",
		"in-reply":           "PROTECTED_BY_RULE: conversation: a thread you wrote in",
		"in-stranger":        "REVIEW: review: looks like a person's mail",
		"in-friend-forged":   "REVIEW: review:",
		"in-stranger-forged": "LIKELY_REMOVABLE: junk: unsolicited",
		"sent-1":             "PROTECTED_BY_RULE: conversation: you sent it",
	} {
		if !strings.Contains(got[id], want) {
			t.Errorf("%s: %q, want %q", id, got[id], want)
		}
	}
}

// A stranger's person-like mail with one mark of junk is removable only when it was not even
// addressed to the owner: the owner's addresses are the ones much of the mailbox is sent to.
func TestStrangerNotAddressedToTheOwner(t *testing.T) {
	var objs []plan.Object
	for i := range 40 { // the owner's ordinary mail, from many people
		objs = append(objs, message(fmt.Sprintf("P%d <p%d@people.example>", i, i), "notes", nil, func(o *plan.Object) {
			o.ID, o.To = fmt.Sprintf("in-%d", i), []string{"Me <me@home.example>"}
		}))
	}
	shout := func(id, to string) plan.Object {
		return message("Cat <cat@far.example>", "Your rate is approved          QEEB", nil, func(o *plan.Object) { o.ID, o.To = id, []string{to} })
	}
	objs = append(objs, shout("to-me", "me@home.example"), shout("to-other", "someone@else.example"))
	p := build(t, request(&svcv1.SourcePolicy{}, objs...))
	got := map[string]string{}
	for _, o := range p.Objects {
		got[o.ProviderObjectId] = o.StorageClass.String() + ": " + o.StorageClassReason
	}
	for id, want := range map[string]string{
		"to-me":    "REVIEW: review: looks like a person's mail",
		"to-other": "LIKELY_REMOVABLE: junk: unsolicited, from someone you never wrote to, not addressed to you, the subject is padded",
		"in-3":     "REVIEW: review: looks like a person's mail",
	} {
		if !strings.Contains(got[id], want) {
			t.Errorf("%s: %q, want %q", id, got[id], want)
		}
	}
}

// The simulated mailbox (the dev seed's) draws on the labelled corpus and delivers some messages
// twice, so a plan over it shows every storage class, duplicates included, each object with its
// reason.
func TestSimulatedMailboxShowsEveryClass(t *testing.T) {
	p, err := simulated.New(context.Background(), providers.Config{"seed": "3", "objects": "3000"})
	if err != nil {
		t.Fatal(err)
	}
	req := request(&svcv1.SourcePolicy{RemovePromotional: proto.Bool(true), MinAgeDays: i64(30)})
	req.Sources[0].Objects = discover.Objects(p, "mail")
	pl := build(t, req)
	seen := map[svcv1.StorageClass]int{}
	for _, o := range pl.Objects {
		seen[o.StorageClass]++
		if o.StorageClassReason == "" {
			t.Fatalf("object %s (%v) has no reason", o.ProviderObjectId, o.StorageClass)
		}
	}
	for c := svcv1.StorageClass(1); c <= svcv1.StorageClass_STORAGE_CLASS_PROTECTED_BY_RULE; c++ {
		if seen[c] == 0 {
			t.Errorf("no %v in the simulated mailbox: %v", c, seen)
		}
	}
}
