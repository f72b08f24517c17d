package simulated_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/providertest"
	"svc.dev/svc/providers/simulated"
)

func open(t testing.TB, cfg providers.Config) providers.Provider {
	t.Helper()
	p, err := simulated.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConformance(t *testing.T) {
	for _, src := range []string{"mail", "files/team"} {
		t.Run(src, func(t *testing.T) {
			providertest.Run(t, providertest.Harness{
				Open: func(t testing.TB) (providers.Provider, string) {
					return open(t, providers.Config{"seed": "7", "objects": "40"}), src
				},
				MinObjects: 40,
			})
		})
	}
}

func TestDeterministic(t *testing.T) {
	ctx := context.Background()
	a, _ := providertest.ListAll(ctx, t, open(t, providers.Config{"seed": "3", "objects": "300"}), "mail", 0)
	b, _ := providertest.ListAll(ctx, t, open(t, providers.Config{"seed": "3", "objects": "300"}), "mail", 17)
	c, _ := providertest.ListAll(ctx, t, open(t, providers.Config{"seed": "4", "objects": "300"}), "mail", 0)
	if len(a) != 300 || len(b) != 300 {
		t.Fatalf("listed %d and %d objects, want 300", len(a), len(b))
	}
	same := 0
	for i := range a {
		if a[i].Name != b[i].Name || a[i].SizeBytes != b[i].SizeBytes || !a[i].CreatedAt.Equal(b[i].CreatedAt) {
			t.Fatalf("object %d differs between runs with one seed", i)
		}
		if a[i].Name == c[i].Name && a[i].SizeBytes == c[i].SizeBytes {
			same++
		}
	}
	if same > 30 {
		t.Errorf("%d of 300 objects identical across seeds", same)
	}
}

func TestDistribution(t *testing.T) {
	ctx := context.Background()
	mail, _ := providertest.ListAll(ctx, t, open(t, providers.Config{"objects": "2000"}), "mail", 0)
	var unsub, oneClick, billing, payout, large, starred, dup int
	for _, o := range mail {
		h := o.Message
		if h == nil {
			t.Fatalf("mail object %s without headers", o.ID)
		}
		if h.ListUnsubscribe != "" {
			unsub++
		}
		if h.ListUnsubscribePost {
			oneClick++
		}
		for _, c := range o.Containers {
			switch c {
			case "Billing":
				billing++
			case "Payouts":
				payout++
			}
		}
		if o.SizeBytes > 2<<20 {
			large++
		}
		if o.Starred {
			starred++
		}
		if o.Metadata["duplicate_of"] != "" {
			dup++
		}
	}
	check := func(what string, n, lo, hi int) {
		if n < lo || n > hi {
			t.Errorf("%s: %d of 2000, want %d..%d", what, n, lo, hi)
		}
	}
	check("List-Unsubscribe", unsub, 800, 1200)
	check("one-click", oneClick, 200, 500) // promotions, plus the corpus share of mail (half)
	// The billing, trial and payout mail of billing.go (20 and 13 messages in all), and copies
	// of some of them; the corpus's receipts are filed in the inbox.
	check("billing and trial", billing, 20, 40)
	check("payouts", payout, 13, 30)
	check("large attachments", large, 100, 250)
	check("starred", starred, 20, 110)
	check("duplicates", dup, 50, 160)

	files, _ := providertest.ListAll(ctx, t, open(t, providers.Config{"objects": "1000"}), "files", 0)
	var shared, photos int
	for _, o := range files {
		if o.Shared {
			shared++
		}
		if o.Kind == providers.KindPhoto {
			photos++
		}
	}
	check("shared files", shared, 50, 160)
	check("photos", photos, 250, 500)
}

func TestDuplicatesHaveSameContent(t *testing.T) {
	ctx := context.Background()
	p := open(t, providers.Config{"objects": "400"})
	objs, _ := providertest.ListAll(ctx, t, p, "mail", 0)
	for _, o := range objs {
		orig := o.Metadata["duplicate_of"]
		if orig == "" || o.SizeBytes > 1<<20 {
			continue
		}
		a, b := fetchAll(t, p, o.ID), fetchAll(t, p, orig)
		if string(a) != string(b) {
			t.Fatalf("duplicate %s and its original %s differ", o.ID, orig)
		}
		return
	}
	t.Fatal("no small duplicate among 400 objects")
}

func fetchAll(t *testing.T, p providers.Provider, id string) []byte {
	t.Helper()
	c, err := p.Fetch(context.Background(), providers.FetchRequest{SourceRef: "mail", ObjectID: id})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Body.Close()
	b, err := io.ReadAll(c.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFaultTransient(t *testing.T) {
	p := open(t, providers.Config{"transient_every": "3"})
	var transient int
	for range 9 {
		if _, err := p.List(context.Background(), providers.ListRequest{SourceRef: "mail"}); errors.Is(err, providers.ErrTransient) {
			transient++
		}
	}
	if transient != 3 {
		t.Errorf("%d transient failures in 9 calls, want 3", transient)
	}
}

func TestFaultVersionChangeMidRun(t *testing.T) {
	ctx := context.Background()
	p := open(t, providers.Config{"objects": "20", "version_change_after": "2"})
	objs, m := providertest.ListAll(ctx, t, p, "mail", 0)
	for i, o := range objs[:3] {
		c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: "mail", ObjectID: o.ID, ExpectedVersion: o.Version})
		if i < 2 {
			if err != nil {
				t.Fatalf("fetch %d: %v", i, err)
			}
			c.Body.Close()
			continue
		}
		var vm *providers.VersionMismatchError
		if !errors.As(err, &vm) || vm.Actual == o.Version {
			t.Fatalf("third fetch: got %v, want a version mismatch", err)
		}
	}
	_, m2 := providertest.ListAll(ctx, t, p, "mail", 0)
	if m == m2 {
		t.Error("marker did not move after the change")
	}
	page, err := p.Changes(ctx, providers.ChangesRequest{SourceRef: "mail", Since: m})
	if err != nil || len(page.Changes) != 1 || page.Changes[0].ObjectID != objs[2].ID || page.Changes[0].Type != providers.ChangeUpsert {
		t.Fatalf("changes: %+v, %v", page, err)
	}
}

func TestFaultCrashInProcess(t *testing.T) {
	crashed := 0
	f := simulated.NewFactory(simulated.Options{Crash: func() { crashed++ }})
	p, err := f(context.Background(), providers.Config{"crash_after": "1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.List(context.Background(), providers.ListRequest{SourceRef: "mail"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.List(context.Background(), providers.ListRequest{SourceRef: "mail"}); !errors.Is(err, providers.ErrTransient) || crashed != 1 {
		t.Fatalf("second call: %v, crashed %d", err, crashed)
	}
}

func TestLargeSourceIsLazy(t *testing.T) {
	p := open(t, providers.Config{"objects": "1000000"})
	page, err := p.List(context.Background(), providers.ListRequest{SourceRef: "mail", PageToken: "i:999990", PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != 10 || page.NextPageToken != "" || page.Objects[9].ID != "msg-00999999" {
		t.Fatalf("tail page: %d objects, next %q", len(page.Objects), page.NextPageToken)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []providers.Config{{"objects": "-1"}, {"seed": "x"}, {"nonsense": "1"}, {"objects": "20000000"}} {
		if _, err := simulated.New(context.Background(), cfg); !errors.Is(err, providers.ErrInvalidArgument) {
			t.Errorf("config %v: got %v, want ErrInvalidArgument", cfg, err)
		}
	}
}

// Every billing, trial and payout message is in a mailbox of 1,000 objects, listed with the
// headers of the bytes a fetch streams; a mailbox of 2,000 holds them once more only as
// copies.
func TestBillingMail(t *testing.T) {
	ctx := context.Background()
	p := open(t, providers.Config{"objects": "1000", "seed": "5"})
	objs, _ := providertest.ListAll(ctx, t, p, "mail", 0)
	seen := map[string]bool{}
	for _, o := range objs {
		if o.Metadata[simulated.BillingKey] == "" || o.Metadata["duplicate_of"] != "" {
			continue
		}
		c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: "mail", ObjectID: o.ID})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(c.Body)
		c.Body.Close()
		h, _ := providers.ReadMail(bytes.NewReader(raw))
		if int64(len(raw)) != o.SizeBytes || h.Subject != o.Message.Subject || !h.Date.Equal(o.CreatedAt) {
			t.Fatalf("%s: listed %q %v %d bytes, fetched %q %v %d bytes", o.ID, o.Message.Subject, o.CreatedAt, o.SizeBytes, h.Subject, h.Date, len(raw))
		}
		id := string(raw[bytes.Index(raw, []byte("Message-ID:")):][:40])
		if seen[id] {
			t.Fatalf("%s: billing message listed twice", id)
		}
		seen[id] = true
	}
	if want := simulated.BillingMessages(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)); len(seen) != want {
		t.Fatalf("%d billing messages listed, want %d", len(seen), want)
	}
}
