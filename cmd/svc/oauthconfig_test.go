package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"svc.dev/svc/providers"
)

func writeConfig(t *testing.T, body string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "oauth.json")
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadOAuthConfig(t *testing.T) {
	registered := []providers.Name{providers.VendorAMail, providers.Simulated}
	env := map[string]string{"VENDOR_A_SECRET": "s3cret"}
	getenv := func(k string) string { return env[k] }

	path := writeConfig(t, `{"vendor_a_mail": {"auth_url": "https://auth.vendor-a.example/authorize",
		"token_url": "https://auth.vendor-a.example/token", "client_id": "svc", "client_secret_env": "VENDOR_A_SECRET",
		"scopes": ["mail.read", "mail.modify"], "display_name": "Vendor A"}}`, 0o644)
	got, err := loadOAuthConfig(path, registered, getenv)
	if err != nil {
		t.Fatal(err)
	}
	p := got[providers.VendorAMail]
	if p.ClientSecret != "s3cret" || p.ClientID != "svc" || p.TokenURL != "https://auth.vendor-a.example/token" ||
		len(p.Scopes) != 2 || p.DisplayName != "Vendor A" {
		t.Fatalf("loaded %+v", p)
	}

	inline := `{"vendor_a_mail": {"auth_url": "http://127.0.0.1:9000/a", "token_url": "http://127.0.0.1:9000/t", "client_id": "svc", "client_secret": "s"}}`
	if _, err := loadOAuthConfig(writeConfig(t, inline, 0o600), registered, getenv); err != nil {
		t.Fatalf("owner-only file with an inline secret, loopback http: %v", err)
	}

	for name, c := range map[string]struct {
		body string
		mode os.FileMode
		want string
	}{
		"readable secret":   {inline, 0o644, "chmod 600"},
		"unknown provider":  {`{"vendor_z": {"auth_url": "https://a.example/a", "token_url": "https://a.example/t", "client_id": "c"}}`, 0o600, "not a provider name"},
		"not registered":    {`{"vendor_b_mail": {"auth_url": "https://a.example/a", "token_url": "https://a.example/t", "client_id": "c"}}`, 0o600, "install its plugin"},
		"no client id":      {`{"vendor_a_mail": {"auth_url": "https://a.example/a", "token_url": "https://a.example/t"}}`, 0o600, "client_id is required"},
		"plain http":        {`{"vendor_a_mail": {"auth_url": "http://a.example/a", "token_url": "https://a.example/t", "client_id": "c"}}`, 0o600, "want https"},
		"relative url":      {`{"vendor_a_mail": {"auth_url": "/a", "token_url": "https://a.example/t", "client_id": "c"}}`, 0o600, "absolute"},
		"both secrets":      {`{"vendor_a_mail": {"auth_url": "https://a.example/a", "token_url": "https://a.example/t", "client_id": "c", "client_secret": "x", "client_secret_env": "Y"}}`, 0o600, "not both"},
		"unset secret env":  {`{"vendor_a_mail": {"auth_url": "https://a.example/a", "token_url": "https://a.example/t", "client_id": "c", "client_secret_env": "NOPE"}}`, 0o600, "$NOPE"},
		"unknown field":     {`{"vendor_a_mail": {"authorize": "https://a.example/a"}}`, 0o600, "unknown field"},
		"bad kind":          {`{"vendor_a_mail": {"auth_url": "https://a.example/a", "token_url": "https://a.example/t", "client_id": "c", "kind": "photos"}}`, 0o600, "want mail or files"},
		"not a JSON object": {`[]`, 0o600, "cannot unmarshal"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadOAuthConfig(writeConfig(t, c.body, c.mode), registered, getenv)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}

// The binary refuses to start on a bad --oauth-config or --base-url, saying why.
func TestServeRefusesBadOAuthConfig(t *testing.T) {
	bin := svcBinary(t)
	// vendor_a_mail is a built-in now: the entry is bad for its missing client_id.
	path := writeConfig(t, `{"vendor_a_mail": {"auth_url": "https://a.example/a", "token_url": "https://a.example/t"}}`, 0o600)
	for _, args := range [][]string{
		{"--oauth-config", path},
		{"--base-url", "svc.example.com"},
	} {
		cmd := exec.Command(bin, append([]string{"serve", "--in-process-providers", "--addr", "127.0.0.1:0", "--data", t.TempDir()}, args...)...)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("%v: started", args)
		}
		if !strings.Contains(string(out), "client_id is required") && !strings.Contains(string(out), "want an origin") {
			t.Fatalf("%v: %s", args, out)
		}
	}
}
