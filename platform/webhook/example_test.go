package webhook_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"svc.dev/svc/platform/webhook"
)

// A receiver verifies the signature over the raw body before it trusts anything in it, then
// deduplicates on the event id and answers 2xx quickly.
func ExampleVerify() {
	secret := "whsec_0123456789abcdefghijklmnopqrstuv" // from the webhook's creation
	seen := map[string]bool{}                          // use durable storage in a real receiver

	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 2<<20))
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		if err := webhook.Verify(r.Header.Get("Svc-Signature"), body, secret, time.Now(), 5*time.Minute); err != nil {
			http.Error(w, "bad signature", http.StatusBadRequest)
			return
		}
		var events []struct {
			ID   string         `json:"id"`
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal(body, &events); err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		for _, ev := range events {
			if seen[ev.ID] {
				continue // a retry of something already handled
			}
			seen[ev.ID] = true
			fmt.Println(ev.Type, ev.Data["plan_id"])
		}
		w.WriteHeader(http.StatusNoContent)
	})

	// What svc sends (here built by hand with Sign).
	body := `[{"specversion":"1.0","id":"evt_01M817QNM0FE1M6FMQ8D1GW6M7","source":"/v1/plans","type":"svc.plan.authorized",` +
		`"time":"2026-11-22T09:00:00Z","subject":"pln_01M817QNM0FE1M6FMQ8AD0KZ8F","datacontenttype":"application/json",` +
		`"data":{"plan_id":"pln_01M817QNM0FE1M6FMQ8AD0KZ8F"},"svcsimulated":true}]`
	for range 2 { // the second is a redelivery
		req := httptest.NewRequest(http.MethodPost, "/svc-webhooks", strings.NewReader(body))
		req.Header.Set("Svc-Signature", webhook.Sign(time.Now(), []byte(body), secret))
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		fmt.Println(rec.Code)
	}
	// Output:
	// svc.plan.authorized pln_01M817QNM0FE1M6FMQ8AD0KZ8F
	// 204
	// 204
}
