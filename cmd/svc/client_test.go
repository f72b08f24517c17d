package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"svc.dev/svc/client"
)

// A client command finds the credentials file where the README's tour leaves it
// (./svc-data), then in $SVC_DATA, then in the default data directory (issue 20, 3).
func TestCredentialsAreFoundWhereTheTourPutsThem(t *testing.T) {
	writeCreds := func(dir, key string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf(`{"base_url":"http://127.0.0.1:1","test_api_key":%q,"connection_id":"cxn_X","session_cookie":"sess-%s"}`, key, key)
		if err := os.WriteFile(filepath.Join(dir, credentialsName), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	xdg, env, wd := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("XDG_DATA_HOME", xdg)
	t.Setenv("SVC_DATA", env)
	for _, k := range []string{"SVC_URL", "SVC_API_KEY", "SVC_SESSION", "SVC_CONNECTION_ID"} {
		t.Setenv(k, "")
	}
	t.Chdir(wd)
	resolved := func(asUser bool) clientFlags {
		t.Helper()
		var cf clientFlags
		cf.register(&cobra.Command{})
		cf.asUser = asUser
		if err := cf.resolve(); err != nil {
			t.Fatal(err)
		}
		return cf
	}

	writeCreds(filepath.Join(xdg, "svc"), "sk_test_default")
	if cf := resolved(false); cf.apiKey != "sk_test_default" {
		t.Fatalf("default data directory: key %q", cf.apiKey)
	}
	writeCreds(env, "sk_test_env")
	if cf := resolved(false); cf.apiKey != "sk_test_env" {
		t.Fatalf("$SVC_DATA: key %q", cf.apiKey)
	}
	writeCreds(filepath.Join(wd, "svc-data"), "sk_test_here")
	cf := resolved(false)
	if cf.apiKey != "sk_test_here" || cf.connection != "cxn_X" || cf.server != "http://127.0.0.1:1" {
		t.Fatalf("./svc-data: %+v", cf)
	}
	// The end user's session, in their test tenant, with --as-user.
	if cf := resolved(true); cf.session != "sess-sk_test_here" || !cf.testMode || cf.apiKey != "" {
		t.Fatalf("--as-user: %+v", cf)
	}
}

// A printed next step carries what the command that printed it needed to reach the server,
// and --as-user when the end user must approve; it never prints a secret the user did not
// type (issue 20, 3).
func TestNextStepsRunAsPrinted(t *testing.T) {
	parse := func(args ...string) *clientFlags {
		t.Helper()
		var cf clientFlags
		cmd := &cobra.Command{RunE: func(*cobra.Command, []string) error { return nil }}
		cf.register(cmd)
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		return &cf
	}
	for _, c := range []struct {
		args   []string
		asUser bool
		want   string
	}{
		{nil, false, " apply pln_1"},
		{nil, true, " apply pln_1 --as-user"},
		{[]string{"--credentials", "my creds.json"}, true, " apply pln_1 --credentials 'my creds.json' --as-user"},
		{[]string{"--server", "http://h:1", "--api-key", "sk_test_k", "--connection", "cxn_1"}, false, " apply pln_1 --server http://h:1 --api-key sk_test_k --connection cxn_1"},
		{[]string{"--session", "abc", "--test-mode"}, true, " apply pln_1 --session abc --test-mode"},
	} {
		got := parse(c.args...).commandLine(c.asUser, "apply", "pln_1")
		if !strings.HasSuffix(got, c.want) {
			t.Errorf("%v (as user %v): %q, want ...%q", c.args, c.asUser, got, c.want)
		}
	}
	// A step_up_required problem says which credential gives the approval.
	err := explain(&client.Error{Status: 403, Code: "step_up_required", Title: "Step-up required", RequiredApprovals: []string{"human_user"}})
	if !strings.Contains(err.Error(), "--as-user") || !strings.Contains(err.Error(), "end user's own session") {
		t.Fatalf("step_up_required: %v", err)
	}
}
