package server_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"svc.dev/svc/server"
)

// receiver records deliveries.
type receiver struct {
	mu   sync.Mutex
	got  []http.Header
	body [][]byte
	ts   *httptest.Server
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got, r.body = append(r.got, req.Header.Clone()), append(r.body, b)
		r.mu.Unlock()
	}))
	t.Cleanup(r.ts.Close)
	return r
}

// wait returns the n-th delivery (0-based) once it arrived.
func (r *receiver) wait(t *testing.T, n int) (http.Header, []byte) {
	t.Helper()
	for range 400 {
		r.mu.Lock()
		if len(r.got) > n {
			h, b := r.got[n], r.body[n]
			r.mu.Unlock()
			return h, b
		}
		r.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("delivery %d did not arrive", n)
	return nil, nil
}

// signed checks Svc-Signature by hand: HMAC-SHA256 over "t.body" for every v1 value.
func signed(t *testing.T, h http.Header, body []byte, secrets ...string) {
	t.Helper()
	var ts string
	var v1 []string
	for _, part := range strings.Split(h.Get("Svc-Signature"), ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			v1 = append(v1, v)
		}
	}
	if len(v1) != len(secrets) {
		t.Fatalf("%d signatures for %d secrets: %q", len(v1), len(secrets), h.Get("Svc-Signature"))
	}
	for i, secret := range secrets {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(ts + "."))
		mac.Write(body)
		if hex.EncodeToString(mac.Sum(nil)) != v1[i] {
			t.Fatalf("signature %d does not verify", i)
		}
	}
}

func TestWebhooksDeliverSignedEvents(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.Dev = true })
	rcv := newReceiver(t)
	r := e.do("POST", "/v1/webhooks", `{"url":"`+rcv.ts.URL+`/hook","event_types":["svc.plan.*","svc.webhook.test"],"mode":"test"}`, e.key()...)
	w := r.json(t)
	secret, _ := w["secret"].(string)
	if r.status != 201 || secret == "" || w["status"] != "active" {
		t.Fatalf("create webhook: %d %s", r.status, r.body)
	}
	id := w["id"].(string)
	if r := e.do("GET", "/v1/webhooks", "", e.key()...); strings.Contains(string(r.body), secret) {
		t.Fatal("the list shows the secret")
	}
	// A live webhook of the same application gets no test events.
	live := newReceiver(t)
	e.do("POST", "/v1/webhooks", `{"url":"`+live.ts.URL+`","event_types":["*"],"mode":"live"}`, e.liveKey()...)

	// A test-mode plan event reaches the test webhook, signed.
	e.do("POST", "/v1/plans?connection_id="+e.creds.ConnectionID, `{"intent":"rescue"}`, e.key()...)
	h, body := rcv.wait(t, 0)
	signed(t, h, body, secret)
	var evs []map[string]any
	if err := json.Unmarshal(body, &evs); err != nil || len(evs) == 0 || evs[0]["type"] != "svc.plan.created" || evs[0]["svcsimulated"] != true {
		t.Fatalf("delivery body: %s", body)
	}
	if h.Get("Svc-Webhook-Id") != id || !strings.HasPrefix(h.Get("Svc-Delivery-Id"), "dlv_") {
		t.Fatalf("headers: %v", h)
	}
	// Rotation: both secrets sign for 24 hours.
	r = e.do("POST", "/v1/webhooks/"+id+"/rotate", "", e.key()...)
	newSecret := r.json(t)["secret"].(string)
	if r := e.do("POST", "/v1/webhooks/"+id+"/test", "", e.key()...); r.status != 202 {
		t.Fatalf("test event: %d %s", r.status, r.body)
	}
	h, body = rcv.wait(t, 1)
	signed(t, h, body, newSecret, secret)
	// Deliveries are listed with their outcome.
	var ds struct {
		Data []map[string]any `json:"data"`
	}
	for range 100 {
		json.Unmarshal(e.do("GET", "/v1/webhooks/"+id+"/deliveries", "", e.key()...).body, &ds)
		if len(ds.Data) == 2 && ds.Data[0]["status"] == "succeeded" && ds.Data[1]["status"] == "succeeded" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(ds.Data) != 2 || ds.Data[0]["status"] != "succeeded" {
		t.Fatalf("deliveries: %v", ds.Data)
	}
	live.mu.Lock()
	n := len(live.got)
	live.mu.Unlock()
	if n != 0 {
		t.Fatalf("the live webhook got %d test-mode deliveries", n)
	}
	// Another application's key cannot see the webhook.
	checkProblem(t, e.do("GET", "/v1/webhooks/whk_01JD0000000000000000000000", "", e.key()...), 404, "not_found")
	if r := e.do("DELETE", "/v1/webhooks/"+id, "", e.key()...); r.status != 200 {
		t.Fatalf("delete: %d", r.status)
	}
}

// Outside --dev, receivers on loopback and private networks are refused.
func TestWebhookSSRFRefused(t *testing.T) {
	e := newEnv(t)
	for _, u := range []string{"http://127.0.0.1:9/x", "http://localhost/x", "http://10.0.0.1/x", "http://169.254.169.254/latest", "ftp://example.com/x"} {
		r := e.do("POST", "/v1/webhooks", `{"url":"`+u+`","event_types":["*"],"mode":"test"}`, e.key()...)
		if r.status != 400 {
			t.Errorf("%s: %d %s", u, r.status, r.body)
		}
	}
}
