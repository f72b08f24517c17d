package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"svc.dev/svc/client"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/receipt"
)

// runReceiptCmd runs "svc receipt ARGS..." and returns its output and error.
func runReceiptCmd(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := newReceiptCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	return out.String(), err
}

func TestReceiptVerifyCommand(t *testing.T) {
	dir := t.TempDir()
	keys, err := receipt.OpenKeyring(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	in := receipt.Input{
		ExecutionID: "exe_01JD8Y5Q6R7S8T9V0W1X2Y3Z4B", PlanID: "pln_01JD8Y5Q6R7S8T9V0W1X2Y3Z4C", PlanHash: "ab", TenantRef: "t",
		Actor:         &svcv1.Actor{Type: svcv1.ActorType_ACTOR_TYPE_USER, PrincipalId: "usr_x"},
		Authorization: receipt.Authorization{ActionDecisionID: "dec_1", PolicyVersion: "p1"},
		Intent:        svcv1.PlanIntent_PLAN_INTENT_SVC, StartedAt: at, FinishedAt: at.Add(time.Minute),
		Objects: []receipt.Object{{AssetID: "ast_1", ProviderObjectID: "m1", Actions: []svcv1.PlanAction{1}, Status: receipt.Completed}},
	}
	r, served, err := receipt.Issue(&in, keys)
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "receipt.json")
	os.WriteFile(good, served, 0o644)
	keyFile := filepath.Join(dir, "keys.json")
	os.WriteFile(keyFile, keys.KeySet(), 0o644)

	tampered := bytes.Replace(served, []byte(`"completed":1`), []byte(`"completed":2`), 1)
	bad := filepath.Join(dir, "tampered.json")
	os.WriteFile(bad, tampered, 0o644)

	var fetched []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		fetched = append(fetched, req.URL.Path)
		if req.URL.Path != client.ReceiptKeysPath {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(keys.KeySet())
	}))
	defer srv.Close()

	// A key set from a file, from a URL, from --server; the receipt from a file or stdin.
	for _, args := range [][]string{
		{"verify", good, "--keys", keyFile},
		{"verify", good, "--keys", srv.URL + client.ReceiptKeysPath},
		{"verify", good, "--server", srv.URL + "/"},
		{"verify", "-", "--keys", keyFile},
	} {
		out, err := runReceiptCmd(t, string(served), args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, want := range []string{"receipt " + r.ReceiptId + " verifies", r.Hash, keys.Current(), r.ExecutionId} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: output lacks %q:\n%s", args, want, out)
			}
		}
	}
	if len(fetched) != 2 {
		t.Errorf("fetched %v", fetched)
	}

	failures := []struct {
		args []string
		want string
	}{
		{[]string{"verify", bad, "--keys", keyFile}, "does NOT verify: hash mismatch"},
		{[]string{"verify", good, "--keys", srv.URL + "/nope"}, "404"},
		{[]string{"verify", good, "--keys", filepath.Join(dir, "missing.json")}, "read key set"},
		{[]string{"verify", filepath.Join(dir, "missing.json"), "--keys", keyFile}, "read receipt"},
		{[]string{"verify", good, "--keys", good}, "malformed key set"},
		{[]string{"verify", keyFile, "--keys", keyFile}, "does NOT verify: malformed receipt"},
		{[]string{"verify", good, "--server", ""}, "no key set"},
	}
	other, _ := receipt.OpenKeyring(filepath.Join(dir, "other"))
	otherFile := filepath.Join(dir, "other.json")
	os.WriteFile(otherFile, other.KeySet(), 0o644)
	failures = append(failures, struct {
		args []string
		want string
	}{[]string{"verify", good, "--keys", otherFile}, "unknown key id"})
	for _, f := range failures {
		out, err := runReceiptCmd(t, "", f.args...)
		if err == nil || !strings.Contains(err.Error(), f.want) {
			t.Errorf("%v: error %v, want %q (output %q)", f.args, err, f.want, out)
		}
	}
}
