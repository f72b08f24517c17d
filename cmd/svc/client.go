package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"svc.dev/svc/client"
)

// clientFlags are how client commands reach a running server.
type clientFlags struct {
	server, apiKey, connection, session, credentials string
	testMode                                         bool
	// asUser makes resolve take the credentials file's session cookie rather than its test
	// key, for the commands of the signed-in user's own account.
	asUser bool
}

func (c *clientFlags) register(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVar(&c.server, "server", os.Getenv("SVC_URL"), "server base URL (env SVC_URL; default from the credentials file, else http://127.0.0.1:8080)")
	f.StringVar(&c.apiKey, "api-key", os.Getenv("SVC_API_KEY"), "developer API key (env SVC_API_KEY)")
	f.StringVar(&c.connection, "connection", os.Getenv("SVC_CONNECTION_ID"), "connection id, with an API key (env SVC_CONNECTION_ID)")
	f.StringVar(&c.session, "session", os.Getenv("SVC_SESSION"), "svc_session cookie value, instead of an API key (env SVC_SESSION)")
	f.StringVar(&c.credentials, "credentials", "", "a dev-credentials.json to take the server, test key and connection from (default: the one in the default data directory, if any)")
	f.BoolVar(&c.testMode, "test-mode", false, "with --session, act on the user's test tenant")
}

// resolve fills what is not given from the credentials file.
func (c *clientFlags) resolve() error {
	path := c.credentials
	if path == "" {
		path = filepath.Join(defaultDataDir(), "dev-credentials.json")
		if _, err := os.Stat(path); err != nil {
			path = ""
		}
	}
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
				c.session = creds.SessionCookie
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
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf("\n  retry after %s", e.RetryAfter)
	}
	return errors.New(msg)
}
