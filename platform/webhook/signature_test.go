package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	stripewebhook "github.com/stripe/stripe-go/v85/webhook"

	"svc.dev/svc/id"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/webhook"
)

// handCheck verifies a Svc-Signature header the way the spec describes it, independently of
// the package: split the header, recompute hex(HMAC-SHA256(secret, t + "." + body)).
func handCheck(header string, body []byte, secret string) (ts int64, matched int, total int) {
	var t string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			t = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(t + "." + string(body)))
	want := hex.EncodeToString(m.Sum(nil))
	for _, s := range sigs {
		if s == want {
			matched++
		}
	}
	ts, _ = strconv.ParseInt(t, 10, 64)
	return ts, matched, len(sigs)
}

func TestDeliveryIsSignedAndShaped(t *testing.T) {
	e := newEnv(t)
	e.clock.Set(time.Now().UTC()) // stripe-go checks the tolerance against the real clock
	rc := newReceiver(t)
	ep, secret := e.create(rc.URL+"/hook", platform.ModeTest)
	if !strings.HasPrefix(secret, "whsec_") || len(secret) != len("whsec_")+32 {
		t.Fatalf("secret %q", secret)
	}
	ev := e.event("svc.execution.completed", platform.ModeTest)
	e.publish(platform.ModeTest, ev)
	if n := e.tick(); n != 1 {
		t.Fatalf("Tick made %d requests, want 1", n)
	}
	reqs := rc.got()
	if len(reqs) != 1 {
		t.Fatalf("receiver got %d requests", len(reqs))
	}
	r := reqs[0]
	sig := r.header.Get("Svc-Signature")

	// Independent implementation: stripe-go's webhook package reads the same t=,v1= scheme.
	if err := stripewebhook.ValidatePayloadWithTolerance(r.body, sig, secret, 5*time.Minute); err != nil {
		t.Errorf("stripe-go rejects the signature: %v (header %q)", err, sig)
	}
	if err := stripewebhook.ValidatePayloadWithTolerance(r.body, sig, "whsec_wrong", 5*time.Minute); err == nil {
		t.Error("stripe-go accepts a wrong secret")
	}
	tampered := append([]byte(nil), r.body...)
	tampered[len(tampered)-2] ^= 1
	if err := stripewebhook.ValidatePayloadWithTolerance(tampered, sig, secret, 5*time.Minute); err == nil {
		t.Error("stripe-go accepts a tampered body")
	}
	// By hand.
	ts, matched, total := handCheck(sig, r.body, secret)
	if matched != 1 || total != 1 || ts != e.clock.Now().Unix() {
		t.Errorf("hand check: t=%d matched %d of %d v1 values; want t=%d and 1 of 1", ts, matched, total, e.clock.Now().Unix())
	}
	// The package's own verifier agrees.
	if err := webhook.Verify(sig, r.body, secret, time.Now(), webhook.Tolerance); err != nil {
		t.Errorf("Verify: %v", err)
	}

	ds := e.deliveries(ep.ID)
	if len(ds) != 1 || ds[0].Status != webhook.DeliverySucceeded || len(ds[0].Attempts) != 1 || ds[0].LastResponseStatus != 200 {
		t.Fatalf("deliveries = %+v", ds)
	}
	for h, want := range map[string]string{"Svc-Webhook-Id": ep.ID, "Svc-Delivery-Id": ds[0].ID, "Content-Type": "application/json"} {
		if got := r.header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if !id.Valid("dlv", ds[0].ID) {
		t.Errorf("delivery id %q", ds[0].ID)
	}
	if len(r.events) != 1 {
		t.Fatalf("body %s is not a one-event array", r.body)
	}
	got := r.events[0]
	for k, want := range map[string]any{"specversion": "1.0", "id": ev.GetId(), "type": "svc.execution.completed",
		"source": "/v1/executions", "subject": ev.GetSubject(), "datacontenttype": "application/json", "svcsimulated": true} {
		if got[k] != want {
			t.Errorf("event %s = %v, want %v", k, got[k], want)
		}
	}
	if data, _ := got["data"].(map[string]any); data["note"] != "<b>&</b>" {
		t.Errorf("event data = %v", got["data"])
	}
	if _, err := time.Parse(time.RFC3339Nano, got["time"].(string)); err != nil {
		t.Errorf("event time %v: %v", got["time"], err)
	}
}

func TestRotationSignsWithBothSecretsFor24Hours(t *testing.T) {
	e := newEnv(t)
	start := time.Now().UTC()
	e.clock.Set(start)
	rc := newReceiver(t)
	ep, oldSecret := e.create(rc.URL, platform.ModeLive)
	_, newSecret, err := e.eng.RotateSecret(e.ctx, ep.ID)
	if err != nil || newSecret == oldSecret {
		t.Fatalf("rotate: %q, %v", newSecret, err)
	}
	e.publish(platform.ModeLive, e.event("svc.plan.created", platform.ModeLive))
	e.tick()
	r := rc.got()[0]
	sig := r.header.Get("Svc-Signature")
	if _, matched, total := handCheck(sig, r.body, oldSecret); total != 2 || matched != 1 {
		t.Errorf("during the overlap: %d v1 values, old secret matches %d; header %q", total, matched, sig)
	}
	if _, matched, _ := handCheck(sig, r.body, newSecret); matched != 1 {
		t.Errorf("new secret matches %d", matched)
	}
	if !regexp.MustCompile(`^t=[0-9]+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$`).MatchString(sig) {
		t.Errorf("header %q", sig)
	}
	for _, s := range []string{oldSecret, newSecret} {
		if err := stripewebhook.ValidatePayloadWithTolerance(r.body, sig, s, 5*time.Minute); err != nil {
			t.Errorf("stripe-go with one of the two secrets: %v", err)
		}
	}

	// 24 hours later only the new secret signs.
	e.clock.Advance(24 * time.Hour)
	e.publish(platform.ModeLive, e.event("svc.plan.created", platform.ModeLive))
	e.tick()
	r = rc.got()[1]
	sig = r.header.Get("Svc-Signature")
	if _, matched, total := handCheck(sig, r.body, newSecret); total != 1 || matched != 1 {
		t.Errorf("after the overlap: %d v1 values, new matches %d", total, matched)
	}
	if err := stripewebhook.ValidatePayloadIgnoringTolerance(r.body, sig, oldSecret); !errors.Is(err, stripewebhook.ErrNoValidSignature) {
		t.Errorf("old secret after 24h: %v, want ErrNoValidSignature", err)
	}

	// Two rotations within the overlap: only the two newest secrets sign.
	_, s2, _ := e.eng.RotateSecret(e.ctx, ep.ID)
	_, s3, _ := e.eng.RotateSecret(e.ctx, ep.ID)
	e.publish(platform.ModeLive, e.event("svc.plan.created", platform.ModeLive))
	e.tick()
	r = rc.got()[2]
	sig = r.header.Get("Svc-Signature")
	for s, want := range map[string]int{newSecret: 0, s2: 1, s3: 1} {
		if _, matched, total := handCheck(sig, r.body, s); matched != want || total != 2 {
			t.Errorf("after two rotations: matched %d of %d, want %d of 2", matched, total, want)
		}
	}
}

func TestSignatureTolerance(t *testing.T) {
	body := []byte(`[{"id":"evt_1"}]`)
	secret := "whsec_test"
	now := time.Now()
	for _, c := range []struct {
		age time.Duration
		ok  bool
	}{{0, true}, {4*time.Minute + 50*time.Second, true}, {5*time.Minute + 10*time.Second, false}, {time.Hour, false}} {
		h := webhook.Sign(now.Add(-c.age), body, secret)
		errStripe := stripewebhook.ValidatePayloadWithTolerance(body, h, secret, webhook.Tolerance)
		errOurs := webhook.Verify(h, body, secret, now, webhook.Tolerance)
		if (errStripe == nil) != c.ok || (errOurs == nil) != c.ok {
			t.Errorf("signed %s ago: stripe-go %v, Verify %v; want ok=%v", c.age, errStripe, errOurs, c.ok)
		}
		if !c.ok && (!errors.Is(errStripe, stripewebhook.ErrTooOld) || !errors.Is(errOurs, webhook.ErrSignatureTimestamp)) {
			t.Errorf("signed %s ago: errors %v / %v", c.age, errStripe, errOurs)
		}
	}
	// A header made by stripe-go's own signer verifies with Verify.
	sp := stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: now})
	if err := webhook.Verify(sp.Header, body, secret, now, webhook.Tolerance); err != nil {
		t.Errorf("Verify of a stripe-go header: %v", err)
	}
	if h := webhook.Sign(now, body, secret); h != sp.Header {
		t.Errorf("Sign = %q, stripe-go = %q", h, sp.Header)
	}
	for _, h := range []string{"", "t=1", "v1=00", "t=x,v1=00", "garbage"} {
		if err := webhook.Verify(h, body, secret, now, webhook.Tolerance); err == nil {
			t.Errorf("Verify(%q) accepted", h)
		}
	}
	if err := webhook.Verify(webhook.Sign(now.Add(10*time.Minute), body, secret), body, secret, now, webhook.Tolerance); err == nil {
		t.Error("Verify accepts a timestamp 10 minutes in the future")
	}
}
