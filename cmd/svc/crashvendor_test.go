package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"svc.dev/svc/internal/vendorfake"
	"svc.dev/svc/internal/vendorfake/gmail"
	"svc.dev/svc/receipt"
)

// The crash matrix over a vendor mailbox (issue 25, 6): the binary runs a clean-up of a fake
// Gmail mailbox (the fake lives in this test's process, so it outlives every kill) through the
// vendor_a_mail connector, and is killed with SIGKILL again and again. In the end the
// execution has finished; every message in the mailbox's trash is one the receipt says svc
// trashed, with a vault copy whose SHA-256 is the raw message's; every message the receipt
// says was trashed is in the trash; the receipt verifies offline.
func TestCrashKillMatrixVendorMail(t *testing.T) {
	messages, kills := 150, 6
	if os.Getenv("SVC_CRASH_FULL") != "" {
		messages, kills = 600, 20
	}
	fake := gmail.Start(gmail.Options{Messages: messages, Seed: 7})
	defer fake.Close()
	fake.Slow(50 * time.Millisecond) // a vendor's latency: kills land mid-run
	q := url.Values{}
	for k, v := range fake.Config() {
		q.Set(k, v)
	}
	r := &crashRig{t: t, bin: svcBinary(t), data: t.TempDir(), root: t.TempDir(), home: t.TempDir(),
		devSource: "vendor_a_mail:me?" + q.Encode()}
	r.start()
	_, srcs, _ := r.call("GET", "/v1/sources?provider=vendor_a_mail", "")
	src := ""
	for _, s := range srcs["data"].([]any) {
		if s := s.(map[string]any); s["external_account_id"] == "me" { // not the dev seed's own fake
			src = s["id"].(string)
		}
	}
	if src == "" {
		t.Fatalf("no vendor_a_mail source at the test's fake: %v", srcs)
	}
	st, p, raw := r.call("POST", "/v1/plans", `{"intent":"svc","source_ids":["`+src+`"],"policy":{"removePromotional":true}}`)
	if st != 201 {
		t.Fatalf("plan: %d %s", st, raw)
	}
	planID := p["planId"].(string)
	if st, _, raw := r.call("POST", "/v1/plans/"+planID+"/authorize", `{"plan_hash":"`+p["hash"].(string)+`"}`); st != 200 {
		t.Fatalf("authorize: %d %s", st, raw)
	}
	st, x, raw := r.call("POST", "/v1/plans/"+planID+"/execute", "")
	if st != 202 {
		t.Fatalf("execute: %d %s", st, raw)
	}
	exeID := x["id"].(string)
	for k := range kills {
		if k%2 == 0 {
			time.Sleep(time.Duration(rand.IntN(60)) * time.Millisecond)
			r.cmd.Process.Signal(syscall.SIGKILL)
			r.exited()
			r.start(fmt.Sprintf("SVC_CRASH_AFTER_JOURNAL=%d", 1+rand.IntN(3*messages/kills+5)))
		} else {
			r.exited()
			r.start()
		}
		if st, x, _ = r.call("GET", "/v1/executions/"+exeID, ""); st == 200 && x["receipt_id"] != nil {
			t.Logf("execution finished after %d kills", k+1)
			break
		}
	}
	for deadline := time.Now().Add(2 * time.Minute); x["receipt_id"] == nil && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		_, x, _ = r.call("GET", "/v1/executions/"+exeID, "")
	}
	defer func() { r.cmd.Process.Signal(syscall.SIGTERM); r.exited() }()
	if x["receipt_id"] == nil {
		t.Fatalf("the execution did not finish: %v", x)
	}
	_, _, rcpt := r.call("GET", "/v1/receipts/"+x["receipt_id"].(string), "")
	keys, err := http.Get(r.base + "/.well-known/svc-receipts.json")
	if err != nil {
		t.Fatal(err)
	}
	ks, _ := io.ReadAll(keys.Body)
	keys.Body.Close()
	if _, err := receipt.Verify(rcpt, ks); err != nil {
		t.Fatalf("receipt does not verify: %v\n%s", err, rcpt)
	}
	var rc struct {
		Objects []struct {
			ProviderObjectID string   `json:"providerObjectId"`
			Status           string   `json:"status"`
			Actions          []string `json:"actions"`
			VaultSHA256      *string  `json:"vaultSha256"`
		} `json:"objects"`
	}
	json.Unmarshal(rcpt, &rc)
	trashedBySvc := map[string]*string{}
	for _, o := range rc.Objects {
		if slices.Contains(o.Actions, "trash") && o.Status == "completed" {
			trashedBySvc[o.ProviderObjectID] = o.VaultSHA256
		}
	}
	if len(trashedBySvc) == 0 {
		t.Fatalf("the clean-up trashed nothing: %s", rcpt)
	}
	inTrash := 0
	for _, id := range fake.IDs() {
		trashed := slices.Contains(fake.Labels(id), "TRASH")
		vault, bySvc := trashedBySvc[id]
		switch {
		case trashed && !bySvc:
			t.Errorf("%s is in the trash, but the receipt does not say svc trashed it", id)
		case !trashed && bySvc:
			t.Errorf("%s: the receipt says svc trashed it, but it is not in the trash", id)
		case trashed:
			inTrash++
			if sum := rawSHA256(t, fake.URL(), id); vault == nil || *vault != sum {
				t.Errorf("%s trashed without a verified copy (vault %v, message %s)", id, vault, sum)
			}
		}
	}
	t.Logf("%d messages, %d trashed by svc and in the trash; status %v (attempted %v completed %v failed %v)",
		messages, inTrash, x["status"], x["attempted"], x["completed"], x["failed"])
	if f := x["failed"].(float64); f != 0 {
		t.Errorf("%v assets failed: %v", f, x["errors"])
	}
}

// rawSHA256 is the SHA-256 of a message's raw RFC 5322 bytes, as the Gmail API gives them.
func rawSHA256(t *testing.T, base, id string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/gmail/v1/users/me/messages/"+id+"?format=raw", nil)
	req.Header.Set("Authorization", "Bearer "+vendorfake.AccessToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var m struct {
		Raw string `json:"raw"`
	}
	if err := json.NewDecoder(res.Body).Decode(&m); err != nil {
		t.Fatalf("message %s: %v", id, err)
	}
	b, err := base64.URLEncoding.DecodeString(m.Raw)
	if err != nil {
		if b, err = base64.RawURLEncoding.DecodeString(m.Raw); err != nil {
			t.Fatalf("message %s: %v", id, err)
		}
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
