package gmail_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"svc.dev/svc/internal/vendorfake"
	fake "svc.dev/svc/internal/vendorfake/gmail"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/gmail"
	"svc.dev/svc/providers/providertest"
)

func open(t testing.TB, s *fake.Server, extra map[string]string) providers.Provider {
	t.Helper()
	cfg := providers.Config(s.Config())
	for k, v := range extra {
		cfg[k] = v
	}
	p, err := gmail.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = providers.CloseProvider(p) })
	return p
}

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Harness{
		Open: func(t testing.TB) (providers.Provider, string) {
			return open(t, fake.New(t, fake.Options{Messages: 40, Seed: 7}), nil), "me"
		},
		MinObjects: 30, // the trashed and none else are left out
	})
}

// TestListing: every message but the trashed is listed once, newest first,
// with Gmail's labels as containers and the header facts the planner uses.
func TestListing(t *testing.T) {
	s := fake.New(t, fake.Options{Messages: 300, Seed: 3})
	p := open(t, s, map[string]string{"batch_size": "7"})
	ctx := context.Background()
	objs, m := providertest.ListAll(ctx, t, p, "me", 45)
	if len(objs) != 300 {
		t.Fatalf("listed %d of 300", len(objs))
	}
	if m.Kind != providers.MarkerHistoryID || m.Value == "" {
		t.Errorf("marker %+v", m)
	}
	var spam, lists, sent, replies, user int
	for i, o := range objs {
		if i > 0 && o.CreatedAt.After(objs[i-1].CreatedAt) {
			t.Fatalf("not newest first at %d", i)
		}
		if o.Message == nil || o.Message.From == "" || o.Version == "" || o.SizeBytes == 0 {
			t.Fatalf("object %+v lacks its headers", o)
		}
		if slices.Contains(o.Containers, "SPAM") {
			spam++
		}
		if o.Message.ListID != "" || o.Message.ListUnsubscribe != "" {
			lists++
		}
		if o.Metadata["mail.from_self"] == "true" {
			sent++
		}
		if o.Metadata["mail.in_reply_to"] != "" {
			replies++
		}
		if slices.Contains(o.Containers, "Receipts") || slices.Contains(o.Containers, "Family") {
			user++
		}
	}
	if spam == 0 || lists == 0 || sent == 0 || replies == 0 || user == 0 {
		t.Errorf("spam %d, list mail %d, sent %d, replies %d, user labels %d: want some of each", spam, lists, sent, replies, user)
	}
}

// TestChanges: a delivery, a relabel, a trash (here and elsewhere) and a
// deletion show up in the delta; a marker older than the history kept is
// ErrMarkerExpired.
func TestChanges(t *testing.T) {
	s := fake.New(t, fake.Options{Messages: 20, HistoryKept: 50})
	p := open(t, s, nil)
	ctx := context.Background()
	objs, m := providertest.ListAll(ctx, t, p, "me", 0)
	added := s.Insert([]byte("From: a@example.com\r\nTo: sam.rivera@example.com\r\nSubject: new\r\nMessage-ID: <n@x>\r\n\r\nhello\r\n"), "INBOX")
	s.Relabel(objs[1].ID, []string{"STARRED"}, nil)
	if _, err := p.(providers.Trasher).Trash(ctx, providers.ActionRequest{SourceRef: "me", ObjectID: objs[2].ID}); err != nil {
		t.Fatal(err)
	}
	s.Delete(objs[3].ID)
	var changes []providers.Change
	tok := ""
	var next providers.Marker
	for {
		pg, err := p.Changes(ctx, providers.ChangesRequest{SourceRef: "me", Since: m, PageToken: tok, PageSize: 2})
		if err != nil {
			t.Fatal(err)
		}
		changes = append(changes, pg.Changes...)
		if tok = pg.NextPageToken; tok == "" {
			next = pg.Marker
			break
		}
	}
	want := map[string]providers.ChangeType{added: providers.ChangeUpsert, objs[1].ID: providers.ChangeUpsert,
		objs[2].ID: providers.ChangeDelete, objs[3].ID: providers.ChangeDelete}
	for _, c := range changes {
		if w, ok := want[c.ObjectID]; ok && w == c.Type {
			delete(want, c.ObjectID)
		}
	}
	if len(want) != 0 {
		t.Errorf("changes %+v miss %v", changes, want)
	}
	if next == m || next.Kind != providers.MarkerHistoryID {
		t.Errorf("marker %v after changes since %v", next, m)
	}
	for range 60 { // push the first records out of the history kept
		s.Relabel(objs[5].ID, []string{"Label_1"}, nil)
		s.Relabel(objs[5].ID, nil, []string{"Label_1"})
	}
	if _, err := p.Changes(ctx, providers.ChangesRequest{SourceRef: "me", Since: m}); !errors.Is(err, providers.ErrMarkerExpired) {
		t.Errorf("changes since an expired marker: %v", err)
	}
}

// TestFaults: throttling (429 with Retry-After, 403 userRateLimitExceeded),
// 5xx and dropped connections are ridden out; a listing resumes from its
// page token after a failure; one failing message fails alone in a batch;
// a revoked grant is ErrReauthRequired.
func TestFaults(t *testing.T) {
	ctx := context.Background()
	t.Run("throttled and failing answers", func(t *testing.T) {
		s := fake.New(t, fake.Options{Messages: 120})
		p := open(t, s, nil)
		s.Inject(nil,
			vendorfake.Fault{Status: 429, RetryAfter: "1"},
			vendorfake.Fault{Status: 403, Reason: "userRateLimitExceeded"},
			vendorfake.Fault{Status: 503},
			vendorfake.Fault{Drop: true},
			vendorfake.Fault{Status: 500},
		)
		start := time.Now()
		objs, _ := providertest.ListAll(ctx, t, p, "me", 50)
		if len(objs) != 120 {
			t.Fatalf("listed %d of 120", len(objs))
		}
		if el := time.Since(start); el < time.Second {
			t.Errorf("listing took %v: the Retry-After of 1 s was not honoured", el)
		}
		var statuses []int
		for _, r := range s.Log() {
			statuses = append(statuses, r.Status)
		}
		for _, st := range []int{429, 403, 503, 0, 500} {
			if !slices.Contains(statuses, st) {
				t.Errorf("fault %d never served: %v", st, statuses)
			}
		}
	})
	t.Run("resumable listing", func(t *testing.T) {
		s := fake.New(t, fake.Options{Messages: 50})
		p := open(t, s, nil)
		first, err := p.List(ctx, providers.ListRequest{SourceRef: "me", PageSize: 20})
		if err != nil {
			t.Fatal(err)
		}
		// Every retry of the next page fails: the call gives up...
		s.Inject(func(r *http.Request) bool { return r.URL.Path == "/gmail/v1/users/me/messages" },
			vendorfake.Fault{Status: 503}, vendorfake.Fault{Status: 503}, vendorfake.Fault{Status: 503},
			vendorfake.Fault{Status: 503}, vendorfake.Fault{Status: 503}, vendorfake.Fault{Status: 503})
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if _, err := p.List(cctx, providers.ListRequest{SourceRef: "me", PageSize: 20, PageToken: first.NextPageToken}); !providers.IsRetryable(err) {
			t.Fatalf("a page past its retries: %v, want a retryable error", err)
		}
		// ...and a new provider (as after a crash) resumes from the token.
		p2 := open(t, s, nil)
		seen := map[string]bool{}
		for _, o := range first.Objects {
			seen[o.ID] = true
		}
		tok := first.NextPageToken
		for tok != "" {
			pg, err := p2.List(ctx, providers.ListRequest{SourceRef: "me", PageSize: 20, PageToken: tok})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range pg.Objects {
				if seen[o.ID] {
					t.Fatalf("%s listed twice", o.ID)
				}
				seen[o.ID] = true
			}
			tok = pg.NextPageToken
		}
		if len(seen) != 50 {
			t.Errorf("resumed listing saw %d of 50", len(seen))
		}
	})
	t.Run("partial failures", func(t *testing.T) {
		s := fake.New(t, fake.Options{Messages: 10})
		p := open(t, s, nil)
		objs, _ := providertest.ListAll(ctx, t, p, "me", 0)
		s.FailMessage(objs[1].ID, 500)
		var reqs []providers.FetchRequest
		var treqs []providers.ActionRequest
		for _, o := range objs[:4] {
			reqs = append(reqs, providers.FetchRequest{SourceRef: "me", ObjectID: o.ID, ExpectedVersion: o.Version})
			treqs = append(treqs, providers.ActionRequest{SourceRef: "me", ObjectID: o.ID, ExpectedVersion: o.Version})
		}
		var outs []providers.FetchOutcome
		if err := p.(providers.BatchFetcher).FetchBatch(ctx, reqs, func(_ int, o providers.FetchOutcome) { outs = append(outs, o) }); err != nil {
			t.Fatal(err)
		}
		for i, o := range outs {
			if (i == 1) != (o.Err != nil) || (i == 1 && !errors.Is(o.Err, providers.ErrTransient)) {
				t.Errorf("fetch %d: %v", i, o.Err)
			}
		}
		touts, err := p.(providers.BatchTrasher).TrashBatch(ctx, treqs)
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range touts {
			if (i == 1) != (o.Err != nil) {
				t.Errorf("trash %d: %v", i, o.Err)
			}
		}
		if !slices.Contains(s.Labels(objs[0].ID), "TRASH") || slices.Contains(s.Labels(objs[1].ID), "TRASH") {
			t.Errorf("labels after the batch: %v, %v", s.Labels(objs[0].ID), s.Labels(objs[1].ID))
		}
	})
	t.Run("expired token is refreshed", func(t *testing.T) {
		s := fake.New(t, fake.Options{Messages: 5})
		p := open(t, s, nil)
		s.ExpireAccess()
		if objs, _ := providertest.ListAll(ctx, t, p, "me", 0); len(objs) != 5 {
			t.Errorf("listed %d after a refresh", len(objs))
		}
	})
	t.Run("revoked grant", func(t *testing.T) {
		s := fake.New(t, fake.Options{Messages: 5})
		p := open(t, s, nil)
		s.Revoke()
		_, err := p.List(ctx, providers.ListRequest{SourceRef: "me"})
		if !errors.Is(err, providers.ErrReauthRequired) || !errors.Is(err, providers.ErrPermission) {
			t.Fatalf("list after the grant was revoked: %v, want ErrReauthRequired", err)
		}
	})
}
