package outlook_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	fake "svc.dev/svc/internal/vendorfake/graph"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/outlook"
	"svc.dev/svc/providers/providertest"
)

// config is the fake's own provider configuration (ProviderConfig).
func config(s *fake.Server) providers.Config { return providers.Config(s.ProviderConfig()) }

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Harness{
		Open: func(t testing.TB) (providers.Provider, string) {
			s := fake.Seeded(fake.Seed{Seed: 1, Messages: 30, Files: 1})
			t.Cleanup(s.Close)
			p, err := outlook.New(context.Background(), config(s))
			if err != nil {
				t.Fatal(err)
			}
			return p, "default"
		},
		MinObjects: 20,
	})
}

// TestListedMail: what the planner reads from a listing (senders,
// recipients, list headers, the junk folder, the owner's sent mail,
// snippets, sizes) comes through from Graph's properties and headers.
func TestListedMail(t *testing.T) {
	s := fake.Seeded(fake.Seed{Seed: 2, Messages: 80, Files: 1})
	defer s.Close()
	p, err := outlook.New(context.Background(), config(s))
	if err != nil {
		t.Fatal(err)
	}
	objs, m := providertest.ListAll(context.Background(), t, p, "default", 7)
	if m.Kind != providers.MarkerDeltaToken || len(objs) != 80 {
		t.Fatalf("%d objects, marker %v", len(objs), m)
	}
	count := map[string]int{}
	for _, o := range objs {
		h := o.Message
		if h == nil || h.From == "" || o.SizeBytes == 0 || o.Version == "" || len(o.Containers) != 1 {
			t.Errorf("message %s listed as %+v %+v", o.ID, o, h)
			continue
		}
		if h.Snippet != "" {
			count["snippet"]++
		}
		if h.ListID != "" || h.ListUnsubscribe != "" {
			count["list"]++
		}
		if len(h.To) > 0 {
			count["to"]++
		}
		if o.Metadata["mail.in_reply_to"] != "" {
			count["reply"]++
		}
		if o.Metadata["mail.precedence"] != "" || o.Metadata["mail.spam"] != "" || o.Metadata["mail.auth_fail"] != "" {
			count["verdicts"]++
		}
		switch o.Containers[0] {
		case "Junk Email":
			count["junk"]++
		case "Sent Items":
			if o.Metadata["mail.from_self"] != "true" {
				t.Errorf("sent message %s without mail.from_self", o.ID)
			}
			count["sent"]++
		case "Inbox/Lists":
			count["nested"]++
		}
	}
	for _, k := range []string{"snippet", "list", "to", "reply", "verdicts", "junk", "sent", "nested"} {
		if count[k] == 0 {
			t.Errorf("no listed message has %s (%v)", k, count)
		}
	}
}

// TestLongSubject: a subject longer than the plugin protocol allows is
// clipped (on a character boundary) rather than failing the whole page.
func TestLongSubject(t *testing.T) {
	s := fake.New()
	defer s.Close()
	long := strings.Repeat("é", 3000) // 6,000 bytes
	s.AddMessage("inbox", []byte("From: a@example.com\r\nTo: b@example.com\r\nSubject: =?utf-8?b?"+base64.StdEncoding.EncodeToString([]byte(long))+"?=\r\n\r\nbody\r\n"), time.Now())
	p, err := outlook.New(context.Background(), config(s))
	if err != nil {
		t.Fatal(err)
	}
	objs, _ := providertest.ListAll(context.Background(), t, p, "default", 10)
	if len(objs) != 1 {
		t.Fatalf("%d objects", len(objs))
	}
	if o := objs[0]; len(o.Message.Subject) > 4096 || !utf8.ValidString(o.Message.Subject) || len(o.Message.Subject) < 4000 {
		t.Errorf("subject of %d bytes", len(o.Message.Subject))
	}
	if err := providers.ValidateObject(objs[0]); err != nil {
		t.Error(err)
	}
}

func allChanges(t *testing.T, p providers.Provider, since providers.Marker) ([]providers.Change, providers.Marker) {
	t.Helper()
	var out []providers.Change
	tok := ""
	for {
		pg, err := p.Changes(context.Background(), providers.ChangesRequest{SourceRef: "default", Since: since, PageToken: tok, PageSize: 2})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pg.Changes...)
		if tok = pg.NextPageToken; tok == "" {
			return out, pg.Marker
		}
	}
}

// TestChangesTellMovesFromDeletes: a message moved to another folder is an
// upsert there and no delete; one moved to Deleted Items is a delete; one
// edited elsewhere is an upsert; nothing since is nothing.
func TestChangesTellMovesFromDeletes(t *testing.T) {
	s := fake.Seeded(fake.Seed{Seed: 5, Messages: 30, Files: 1})
	defer s.Close()
	p, err := outlook.New(context.Background(), config(s))
	if err != nil {
		t.Fatal(err)
	}
	objs, m := providertest.ListAll(context.Background(), t, p, "default", 50)
	var inbox []providers.Object
	for _, o := range objs {
		if o.Containers[0] == "Inbox" {
			inbox = append(inbox, o)
		}
	}
	moved, trashed, edited := inbox[0].ID, inbox[1].ID, inbox[2].ID
	s.MoveMessage(moved, "archive")
	s.MoveMessage(trashed, "deleteditems")
	s.EditMessage(edited)
	changes, m2 := allChanges(t, p, m)
	got := map[string]providers.Change{}
	for _, c := range changes {
		if prev, dup := got[c.ObjectID]; dup {
			t.Errorf("%s reported twice: %v then %v", c.ObjectID, prev.Type, c.Type)
		}
		got[c.ObjectID] = c
	}
	if c := got[moved]; c.Type != providers.ChangeUpsert || c.Object.Containers[0] != "Archive" {
		t.Errorf("moved message: %+v", c)
	}
	if c := got[trashed]; c.Type != providers.ChangeDelete {
		t.Errorf("trashed message: %+v", c)
	}
	if c := got[edited]; c.Type != providers.ChangeUpsert {
		t.Errorf("edited message: %+v", c)
	}
	if len(got) != 3 {
		t.Errorf("%d changes, want 3: %v", len(got), changes)
	}
	if again, m3 := allChanges(t, p, m2); len(again) != 0 || m3 != m2 {
		t.Errorf("changes since the new marker: %v, marker moved %v", again, m3 != m2)
	}
}
