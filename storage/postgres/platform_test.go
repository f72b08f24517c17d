package postgres_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"svc.dev/svc/platform"
	"svc.dev/svc/platform/webhook"
)

// Accounts, organizations, applications, keys and connections: unique emails (whatever the
// case), an organization recorded on its owner, lookups by hash, lists by owner, and a user's
// deletion taking their sessions, connections and OAuth states with them.
func TestAccountsAndDevelopers(t *testing.T) {
	s := open(t)
	defer s.Close()
	ctx := context.Background()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	u := &platform.User{ID: "usr_1", Email: "Ada@example.com", CreatedAt: now}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateUser(ctx, &platform.User{ID: "usr_2", Email: " ada@EXAMPLE.com"}); !errors.Is(err, platform.ErrEmailTaken) {
		t.Fatalf("a second user with the same email: %v", err)
	}
	if got, err := s.UserByEmail(ctx, "ADA@example.com"); err != nil || got.ID != "usr_1" {
		t.Fatalf("user by email: %v %v", got, err)
	}
	if _, err := s.User(ctx, "usr_2"); !errors.Is(err, platform.ErrNotFound) {
		t.Fatalf("a user never stored: %v", err)
	}
	if err := s.CreateOrg(ctx, &platform.Org{ID: "org_1", OwnerID: "usr_1"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.User(ctx, "usr_1"); len(got.OrgIDs) != 1 || got.OrgIDs[0] != "org_1" {
		t.Fatalf("the owner's organizations: %v", got.OrgIDs)
	}
	if err := s.CreateOrg(ctx, &platform.Org{ID: "org_2", OwnerID: "usr_9"}); !errors.Is(err, platform.ErrNotFound) {
		t.Fatalf("an organization of no user: %v", err)
	}
	if err := s.CreateApplication(ctx, &platform.Application{ID: "app_1", OrgID: "org_9"}); !errors.Is(err, platform.ErrNotFound) {
		t.Fatalf("an application of no organization: %v", err)
	}
	for _, id := range []string{"app_2", "app_1"} {
		if err := s.CreateApplication(ctx, &platform.Application{ID: id, OrgID: "org_1"}); err != nil {
			t.Fatal(err)
		}
	}
	if apps, err := s.ApplicationsOf(ctx, "org_1"); err != nil || len(apps) != 2 || apps[0].ID != "app_1" {
		t.Fatalf("applications of org_1: %v %v", apps, err)
	}
	if err := s.CreateKey(ctx, &platform.APIKey{ID: "key_1", AppID: "app_1", SecretHash: "h1"}); err != nil {
		t.Fatal(err)
	}
	if k, err := s.KeyBySecretHash(ctx, "h1"); err != nil || k.ID != "key_1" {
		t.Fatalf("key by hash: %v %v", k, err)
	}
	exp := now.Add(time.Hour)
	if k, err := s.UpdateKey(ctx, "key_1", func(k *platform.APIKey) error { k.ExpiresAt = &exp; return nil }); err != nil || k.ExpiresAt == nil {
		t.Fatalf("update key: %v %v", k, err)
	}
	if ks, _ := s.KeysOf(ctx, "app_1"); len(ks) != 1 || ks[0].ExpiresAt == nil || !ks[0].ExpiresAt.Equal(exp) {
		t.Fatalf("keys of app_1: %v", ks)
	}
	for _, c := range []*platform.Connection{{ID: "cxn_1", AppID: "app_1", UserID: "usr_1"}, {ID: "cxn_2", AppID: "app_2", UserID: "usr_1"}, {ID: "cxn_3", AppID: "app_1", UserID: "usr_x"}} {
		if err := s.CreateConnection(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if cs, _ := s.ConnectionsOf(ctx, "usr_1"); len(cs) != 2 {
		t.Fatalf("connections of usr_1: %d", len(cs))
	}
	if cs, _ := s.ConnectionsOfApp(ctx, "app_1"); len(cs) != 2 {
		t.Fatalf("connections of app_1: %d", len(cs))
	}
	if cs, _ := s.ConnectionsOfAppUser(ctx, "app_1", "usr_1"); len(cs) != 1 || cs[0].ID != "cxn_1" {
		t.Fatalf("connections of app_1 to usr_1: %v", cs)
	}
	if c, err := s.UpdateConnection(ctx, "cxn_1", func(c *platform.Connection) error { c.Status = platform.ConnectionRevoked; return nil }); err != nil || c.Status != platform.ConnectionRevoked {
		t.Fatalf("revoke: %v %v", c, err)
	}
	if err := s.CreateSession(ctx, &platform.Session{TokenHash: "t1", UserID: "usr_1", ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutOAuthState(ctx, &platform.OAuthState{Hash: "o1", UserID: "usr_1", ExpiresAt: exp}, now); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateConnectSession(ctx, &platform.ConnectSession{ID: "cxs_1", UserID: "usr_1", ConnectedSourceIDs: []string{"src_1"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteUser(ctx, "usr_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UserByEmail(ctx, "ada@example.com"); !errors.Is(err, platform.ErrNotFound) {
		t.Fatalf("a deleted user by email: %v", err)
	}
	if _, err := s.Session(ctx, "t1"); !errors.Is(err, platform.ErrNotFound) {
		t.Fatalf("a deleted user's session: %v", err)
	}
	if cs, _ := s.ConnectionsOf(ctx, "usr_1"); len(cs) != 0 {
		t.Fatalf("a deleted user's connections: %d", len(cs))
	}
	if _, err := s.TakeOAuthState(ctx, "o1"); !errors.Is(err, platform.ErrNotFound) {
		t.Fatalf("a deleted user's OAuth state: %v", err)
	}
	if cx, err := s.ConnectSession(ctx, "cxs_1"); err != nil || cx.UserID != "" || cx.ConnectedSourceIDs != nil {
		t.Fatalf("a deleted user's connect session: %+v %v", cx, err)
	}
	if err := s.CreateUser(ctx, &platform.User{ID: "usr_3", Email: "ada@example.com"}); err != nil {
		t.Fatalf("the email of a deleted user, taken again: %v", err)
	}
}

// An OAuth state is taken once; expired ones go when another is put.
func TestOAuthStates(t *testing.T) {
	s := open(t)
	defer s.Close()
	ctx := context.Background()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	if err := s.PutOAuthState(ctx, &platform.OAuthState{Hash: "old", ExpiresAt: now.Add(time.Minute)}, now); err != nil {
		t.Fatal(err)
	}
	if err := s.PutOAuthState(ctx, &platform.OAuthState{Hash: "new", ExpiresAt: now.Add(time.Hour)}, now.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TakeOAuthState(ctx, "old"); !errors.Is(err, platform.ErrNotFound) {
		t.Fatalf("an expired state: %v", err)
	}
	if st, err := s.TakeOAuthState(ctx, "new"); err != nil || st.Hash != "new" {
		t.Fatalf("take: %v %v", st, err)
	}
	if _, err := s.TakeOAuthState(ctx, "new"); !errors.Is(err, platform.ErrNotFound) {
		t.Fatalf("a state taken twice: %v", err)
	}
}

// Of 16 concurrent claims of one idempotency key, exactly one proceeds; an expired record is
// claimed again; purges remove old and unfinished records.
func TestIdempotencyClaims(t *testing.T) {
	s := open(t)
	defer s.Close()
	ctx := context.Background()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	const k1 = "k1\x00usr_1\x00POST /v1/plans" // the edge joins a key's parts with NUL
	var proceeded atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			prev, err := s.ClaimIdempotency(ctx, k1, &platform.IdempotencyRecord{CreatedAt: now}, now.Add(-24*time.Hour), now.Add(-24*time.Hour))
			if err != nil {
				t.Error(err)
				return
			}
			if prev == nil {
				proceeded.Add(1)
			}
		})
	}
	wg.Wait()
	if n := proceeded.Load(); n != 1 {
		t.Fatalf("%d of 16 concurrent claims proceeded, want 1", n)
	}
	if err := s.FinishIdempotency(ctx, k1, &platform.IdempotencyRecord{CreatedAt: now, Done: true, Status: 201}); err != nil {
		t.Fatal(err)
	}
	prev, err := s.ClaimIdempotency(ctx, k1, &platform.IdempotencyRecord{CreatedAt: now}, now.Add(-time.Hour), now.Add(time.Minute))
	if err != nil || prev == nil || !prev.Done || prev.Status != 201 {
		t.Fatalf("a claim of a finished key (however old its claim): %+v %v", prev, err)
	}
	// An unfinished claim older than unfinishedBefore was abandoned (its replica died): taken.
	if _, err := s.ClaimIdempotency(ctx, "k3", &platform.IdempotencyRecord{CreatedAt: now}, now.Add(-time.Hour), now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if prev, err := s.ClaimIdempotency(ctx, "k3", &platform.IdempotencyRecord{CreatedAt: now}, now.Add(-time.Hour), now.Add(-time.Minute)); err != nil || prev == nil {
		t.Fatalf("a claim of a key in flight: %+v %v", prev, err)
	}
	if prev, err := s.ClaimIdempotency(ctx, "k3", &platform.IdempotencyRecord{CreatedAt: now.Add(time.Second)}, now.Add(-time.Hour), now.Add(time.Millisecond)); err != nil || prev != nil {
		t.Fatalf("a claim of an abandoned key: %+v %v", prev, err)
	}
	if err := s.ReleaseIdempotency(ctx, "k3"); err != nil {
		t.Fatal(err)
	}
	later := now.Add(25 * time.Hour)
	if prev, err := s.ClaimIdempotency(ctx, k1, &platform.IdempotencyRecord{CreatedAt: later}, later.Add(-24*time.Hour), later.Add(-24*time.Hour)); err != nil || prev != nil {
		t.Fatalf("a claim of an expired key: %+v %v", prev, err)
	}
	if _, err := s.ClaimIdempotency(ctx, "k2", &platform.IdempotencyRecord{CreatedAt: now}, now.Add(-time.Hour), now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PurgeIdempotency(ctx, now.Add(time.Hour), false); err != nil || n != 1 {
		t.Fatalf("purge of old records: %d %v, want 1 (k2)", n, err)
	}
	if n, err := s.PurgeIdempotency(ctx, now, true); err != nil || n != 1 {
		t.Fatalf("purge of unfinished records: %d %v, want 1 (k1, claimed again)", n, err)
	}
	if err := s.ReleaseIdempotency(ctx, k1); err != nil {
		t.Fatal(err)
	}
}

// A live webhook's delivery that becomes succeeded is metered once, for its application and
// organization; a test webhook's is not.
func TestDeliveryMetering(t *testing.T) {
	s := open(t)
	defer s.Close()
	ctx := context.Background()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	if err := s.CreateUser(ctx, &platform.User{ID: "usr_1", Email: "a@example.com"}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateOrg(ctx, &platform.Org{ID: "org_1", OwnerID: "usr_1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateApplication(ctx, &platform.Application{ID: "app_1", OrgID: "org_1"}); err != nil {
		t.Fatal(err)
	}
	w := s.Webhooks()
	for id, mode := range map[string]platform.Mode{"whk_live": platform.ModeLive, "whk_test": platform.ModeTest} {
		if err := w.CreateWebhook(ctx, &webhook.Endpoint{ID: id, AppID: "app_1", Mode: mode}); err != nil {
			t.Fatal(err)
		}
		d := &webhook.Delivery{ID: "dlv_" + id, WebhookID: id, Status: webhook.DeliveryPending, CreatedAt: now, UpdatedAt: now}
		if err := w.CreateDelivery(ctx, d); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			d.Status = webhook.DeliverySucceeded
			if err := w.UpdateDelivery(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, scope := range []string{"org:org_1", "app:app_1"} {
		c, err := s.Usage().Counters(ctx, scope, "2026-11")
		if err != nil || c[platform.MeterWebhookDeliveries] != 1 {
			t.Fatalf("deliveries metered for %s: %v %v, want 1", scope, c, err)
		}
	}
	if act, err := w.ActiveDeliveries(ctx); err != nil || len(act) != 0 {
		t.Fatalf("active deliveries after success: %d %v", len(act), err)
	}
}
