package server_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestApplicationsKeysRotationAndAudit(t *testing.T) {
	e := newEnv(t)
	owner := e.session()
	// An application in the dev org.
	r := e.do("POST", "/v1/developer/applications", `{"org_id":"`+e.creds.OrgID+`","name":"Cleaner","operation_classes":["discover","preserve"],"redirect_uris":["https://app.example/cb"]}`, owner...)
	if r.status != 201 {
		t.Fatalf("create application: %d %s", r.status, r.body)
	}
	app := r.json(t)["id"].(string)
	// Another user's session does not see it.
	stranger := e.signUp(t, "stranger@example.com")
	checkProblem(t, e.do("GET", "/v1/developer/applications/"+app, "", stranger...), 404, "not_found")
	checkProblem(t, e.do("POST", "/v1/developer/applications", `{"org_id":"`+e.creds.OrgID+`","name":"X","operation_classes":["discover"]}`, stranger...), 404, "not_found")

	// A key: the secret is shown once.
	r = e.do("POST", "/v1/developer/applications/"+app+"/keys", `{"mode":"test"}`, owner...)
	k := r.json(t)
	secret, _ := k["secret"].(string)
	if r.status != 201 || !strings.HasPrefix(secret, "sk_test_") || k["last4"] != secret[len(secret)-4:] {
		t.Fatalf("create key: %d %s", r.status, r.body)
	}
	keyID := k["id"].(string)
	r = e.do("GET", "/v1/developer/applications/"+app+"/keys", "", owner...)
	if strings.Contains(string(r.body), secret) || strings.Contains(string(r.body), `"secret"`) {
		t.Fatalf("a key listing shows the secret: %s", r.body)
	}
	// Scopes may not exceed the application's operation classes; keys cannot make keys.
	checkProblem(t, e.do("POST", "/v1/developer/applications/"+app+"/keys", `{"mode":"test","scopes":["remove"]}`, owner...), 403, "forbidden")
	checkProblem(t, e.do("POST", "/v1/developer/applications/"+app+"/keys", `{"mode":"test"}`, "Authorization", "Bearer "+secret), 403, "forbidden")

	// The key works, and its calls are audited.
	newKey := []string{"Authorization", "Bearer " + secret}
	if r := e.do("GET", "/v1/developer/applications/"+app, "", newKey...); r.status != 200 {
		t.Fatalf("key reads its application: %d %s", r.status, r.body)
	}
	checkProblem(t, e.do("GET", "/v1/developer/applications/"+e.creds.ApplicationID, "", newKey...), 404, "not_found")

	// Rotation: the new key works at once, the old one for 24 hours more.
	r = e.do("POST", "/v1/developer/applications/"+app+"/keys/"+keyID+"/rotate", "", owner...)
	rotated := r.json(t)["secret"].(string)
	if r.status != 200 || rotated == secret {
		t.Fatalf("rotate: %d %s", r.status, r.body)
	}
	e.clock.Advance(23 * time.Hour)
	if r := e.do("GET", "/v1/developer/applications/"+app, "", newKey...); r.status != 200 {
		t.Fatalf("old key within the overlap: %d", r.status)
	}
	e.clock.Advance(2 * time.Hour)
	checkProblem(t, e.do("GET", "/v1/developer/applications/"+app, "", newKey...), 401, "unauthenticated")
	if r := e.do("GET", "/v1/developer/applications/"+app, "", "Authorization", "Bearer "+rotated); r.status != 200 {
		t.Fatalf("rotated key: %d", r.status)
	}
	// Revocation is immediate.
	var keys struct {
		Data []map[string]any `json:"data"`
	}
	json.Unmarshal(e.do("GET", "/v1/developer/applications/"+app+"/keys", "", owner...).body, &keys)
	rotatedID := keys.Data[0]["id"].(string)
	if r := e.do("DELETE", "/v1/developer/applications/"+app+"/keys/"+rotatedID, "", owner...); r.status != 200 || r.json(t)["revoked_at"] == nil {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	checkProblem(t, e.do("GET", "/v1/developer/applications/"+app, "", "Authorization", "Bearer "+rotated), 401, "unauthenticated")

	// The audit log has the changes and the key's calls, newest first.
	r = e.do("GET", "/v1/developer/applications/"+app+"/audit?limit=200", "", owner...)
	var audit struct {
		Data []map[string]any `json:"data"`
	}
	json.Unmarshal(r.body, &audit)
	actions := map[string]int{}
	for _, a := range audit.Data {
		actions[a["action"].(string)]++
	}
	for _, want := range []string{"application.created", "key.created", "key.rotated", "key.revoked", "svc.v1.DeveloperService/GetApplication", "svc.v1.DeveloperService/CreateKey"} {
		if actions[want] == 0 {
			t.Errorf("audit lacks %s: %v", want, actions)
		}
	}
	if first := audit.Data[0]; first["action"] != "key.revoked" || first["target"] != rotatedID {
		t.Errorf("newest audit entry: %v", first)
	}
	var byKey, refused bool
	for _, a := range audit.Data {
		d, _ := a["detail"].(map[string]any)
		if a["action"] == "svc.v1.DeveloperService/GetApplication" && a["principal_id"] == keyID && a["target"] == app && d["status"] == float64(200) {
			byKey = true
		}
		if a["principal_id"] == keyID && d["code"] == "not_found" {
			refused = true
		}
	}
	if !byKey || !refused {
		t.Errorf("the key's successful and refused calls are not both audited: %s", r.body)
	}
}
