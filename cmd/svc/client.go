package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"svc.dev/svc/client"
)

// clientFlags are how client commands reach a running server.
type clientFlags struct {
	server, apiKey, connection, session, credentials string
	testMode                                         bool
	// asUser makes resolve take the credentials file's session cookie rather than its test
	// key: set by the commands of the signed-in user's own account, and by --as-user.
	asUser bool
	// found is the credentials file resolve read ("" when none).
	found string
	flags *pflag.FlagSet
}

// CredentialsName is the name of the credentials file svc serve --dev writes into its data
// directory.
const credentialsName = "dev-credentials.json"

// credentialsPaths are where a client command looks for a credentials file when --credentials
// is not given, in order: the data directory the README's tour uses (./svc-data, relative to
// where the command runs), $SVC_DATA, then the default data directory of svc serve.
func credentialsPaths() []string {
	paths := []string{filepath.Join("svc-data", credentialsName)}
	if d := os.Getenv("SVC_DATA"); d != "" {
		paths = append(paths, filepath.Join(d, credentialsName))
	}
	return append(paths, filepath.Join(defaultDataDir(), credentialsName))
}

func (c *clientFlags) register(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVar(&c.server, "server", os.Getenv("SVC_URL"), "server base URL (env SVC_URL; default from the credentials file, else http://127.0.0.1:8080)")
	f.StringVar(&c.apiKey, "api-key", os.Getenv("SVC_API_KEY"), "developer API key (env SVC_API_KEY)")
	f.StringVar(&c.connection, "connection", os.Getenv("SVC_CONNECTION_ID"), "connection id, with an API key (env SVC_CONNECTION_ID)")
	f.StringVar(&c.session, "session", os.Getenv("SVC_SESSION"), "svc_session cookie value, instead of an API key (env SVC_SESSION)")
	f.StringVar(&c.credentials, "credentials", "", "a dev-credentials.json to take the server, test key and connection from (default: the first of ./svc-data/dev-credentials.json, $SVC_DATA/dev-credentials.json and the default data directory's)")
	f.BoolVar(&c.testMode, "test-mode", false, "with --session, act on the user's test tenant")
	if !c.asUser {
		f.BoolVar(&c.asUser, "as-user", false, "act as the end user with the credentials file's session_cookie (in its test tenant), not its test API key: what a step_up_required plan needs")
	}
	c.flags = f
}

// resolve fills what is not given from the credentials file.
func (c *clientFlags) resolve() error {
	path := c.credentials
	if path == "" {
		for _, p := range credentialsPaths() {
			if _, err := os.Stat(p); err == nil {
				path = p
				break
			}
		}
	}
	c.found = path
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("credentials: %w", err)
		}
		var creds struct {
			BaseURL       string `json:"base_url"`
			TestAPIKey    string `json:"test_api_key"`
			ConnectionID  string `json:"connection_id"`
			SessionCookie string `json:"session_cookie"`
		}
		if err := json.Unmarshal(data, &creds); err != nil {
			return fmt.Errorf("credentials %s: %w", path, err)
		}
		if c.server == "" {
			c.server = creds.BaseURL
		}
		if c.apiKey == "" && c.session == "" {
			if c.asUser {
				// A dev credentials file's session reaches the user's test tenant, where the
				// seeded sources and the test key's plans are.
				c.session, c.testMode = creds.SessionCookie, true
			} else {
				c.apiKey, c.connection = creds.TestAPIKey, creds.ConnectionID
			}
		}
	}
	if c.server == "" {
		c.server = "http://127.0.0.1:8080"
	}
	if c.apiKey == "" && c.session == "" {
		return fmt.Errorf("no credential: give --api-key (and --connection) or --session, or --credentials FILE")
	}
	return nil
}

// client returns the API client the flags describe (resolve first).
func (c *clientFlags) client() (*client.Client, error) {
	var cred client.Credential = client.APIKey(c.apiKey)
	if c.apiKey == "" {
		cred = client.Session{Cookie: c.session, TestMode: c.testMode}
	}
	return client.New(c.server, cred, &client.Options{ConnectionID: c.connection, UserAgent: "svc-cli"})
}

// resolveClient resolves the flags and returns their client.
func (c *clientFlags) resolveClient() (*client.Client, error) {
	if err := c.resolve(); err != nil {
		return nil, err
	}
	return c.client()
}

// explain turns an API error into what the user should read: the problem's detail and its
// field errors.
func explain(err error) error {
	var e *client.Error
	if !errors.As(err, &e) || e.Status == 0 {
		return err
	}
	msg := fmt.Sprintf("%s (%d %s)", e.Title, e.Status, e.Code)
	if e.Title == "" {
		msg = fmt.Sprintf("%d %s", e.Status, e.Code)
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	for _, f := range e.Fields {
		msg += fmt.Sprintf("\n  %s: %s", f.Path, f.Message)
	}
	if len(e.RequiredApprovals) > 0 {
		msg += "\n  required approvals: " + strings.Join(e.RequiredApprovals, ", ")
	}
	if e.Code == "step_up_required" {
		msg += "\n  " + stepUpHint
	}
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf("\n  retry after %s", e.RetryAfter)
	}
	return errors.New(msg)
}

// stepUpHint says which credential a step_up_required refusal wants.
const stepUpHint = "an API key cannot give this approval: the end user's own session can. Run the command again with --as-user (the credentials file's session_cookie) or --session COOKIE (and --test-mode for the test tenant)."

// commandLine returns a command to print as a next step: this program as it was invoked, the
// args, and the flags the command needs to reach the same server with the same credentials
// from the same directory. A credential given by flag is named by flag (no secret is printed
// that the user did not type); one found in a credentials file or the environment needs
// nothing. asUser adds --as-user when the user's session must make the call.
func (c *clientFlags) commandLine(asUser bool, args ...string) string {
	parts := append([]string{programName()}, args...)
	changed := func(name string) bool {
		if c.flags == nil {
			return false
		}
		f := c.flags.Lookup(name)
		return f != nil && f.Changed
	}
	if changed("credentials") {
		parts = append(parts, "--credentials", shellQuote(c.credentials))
	}
	if changed("server") {
		parts = append(parts, "--server", shellQuote(c.server))
	}
	switch {
	case asUser && changed("session"):
		parts = append(parts, "--session", shellQuote(c.session))
		if c.testMode {
			parts = append(parts, "--test-mode")
		}
	case asUser && c.session != "" && os.Getenv("SVC_SESSION") == c.session:
		if c.testMode {
			parts = append(parts, "--test-mode")
		}
	case asUser:
		parts = append(parts, "--as-user")
	case changed("api-key"):
		parts = append(parts, "--api-key", shellQuote(c.apiKey))
		if c.connection != "" && changed("connection") {
			parts = append(parts, "--connection", c.connection)
		}
	case changed("session"):
		parts = append(parts, "--session", shellQuote(c.session))
		if c.testMode {
			parts = append(parts, "--test-mode")
		}
	}
	return strings.Join(parts, " ")
}

// programName is how to run this program again: as invoked when that was a path
// (./bin/svc), else "svc" (found on PATH, or a go run whose binary is temporary).
func programName() string {
	if len(os.Args) > 0 && strings.ContainsRune(os.Args[0], os.PathSeparator) && !strings.Contains(os.Args[0], "go-build") {
		if filepath.IsAbs(os.Args[0]) {
			if wd, err := os.Getwd(); err == nil {
				if rel, err := filepath.Rel(wd, os.Args[0]); err == nil && !strings.HasPrefix(rel, "..") {
					return "./" + rel
				}
			}
		}
		return os.Args[0]
	}
	return "svc"
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@,+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
