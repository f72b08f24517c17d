package server_test

import (
	"testing"
)

// GET /v1/vault/coverage: every object was read back from the disk when it was committed, so
// the whole vault is verified within each window; the answer is the tenant's own.
func TestVaultCoverage(t *testing.T) {
	e, _ := mailFolder(t)
	r := e.do("GET", "/v1/vault/coverage?connection_id="+e.creds.ConnectionID, "", e.key()...)
	if r.status != 200 {
		t.Fatalf("coverage: %d %s", r.status, r.body)
	}
	cv := r.json(t)
	objects, _ := cv["objects"].(float64)
	windows, _ := cv["windows"].([]any)
	if objects < 5 || len(windows) != 3 {
		t.Fatalf("coverage: %s", r.body)
	}
	for _, w := range windows {
		w := w.(map[string]any)
		if w["objects"].(float64)+cv["never"].(float64) != objects {
			t.Errorf("window %v: objects verified and never verified do not add up to %v", w, objects)
		}
	}
	// Another tenant's vault is not this one's: a live key sees the live tenant's (empty).
	r = e.do("GET", "/v1/vault/coverage?connection_id="+e.creds.ConnectionID, "", "Authorization", "Bearer "+e.creds.LiveAPIKey)
	if r.status == 200 && r.json(t)["objects"].(float64) == objects {
		t.Errorf("the live key sees the test tenant's coverage: %s", r.body)
	}
}
