package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"

	"svc.dev/svc/providers"
	"svc.dev/svc/server"
)

// oauthEntry is one provider in the file of `svc serve --oauth-config`: svc's client at the
// provider's OAuth 2.0 authorization server. docs/connect.md shows an example.
type oauthEntry struct {
	AuthURL  string `json:"auth_url"`
	TokenURL string `json:"token_url"`
	ClientID string `json:"client_id"`
	// ClientSecret is the secret itself; ClientSecretEnv names an environment variable that
	// holds it instead, which keeps it out of the file. At most one of them.
	ClientSecret    string   `json:"client_secret,omitempty"`
	ClientSecretEnv string   `json:"client_secret_env,omitempty"`
	Scopes          []string `json:"scopes,omitempty"`
	Kind            string   `json:"kind,omitempty"`
	DisplayName     string   `json:"display_name,omitempty"`
	// AuthParams are extra authorization URL parameters (default: what the vendor needs to
	// issue a refresh token, server.DefaultAuthParams).
	AuthParams map[string]string `json:"auth_params,omitempty"`
}

// loadOAuthConfig reads the OAuth configuration of the providers whose sources end users
// connect through the consent page. Every provider it names must be registered (a built-in
// or a plugin), its endpoints absolute https URLs (http only on loopback, for local
// authorization servers), and a file holding a secret readable by its owner alone.
func loadOAuthConfig(path string, registered []providers.Name, getenv func(string) string) (map[providers.Name]server.OAuthProvider, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("oauth config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var file map[string]oauthEntry
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("oauth config %s: %w", path, err)
	}
	out := make(map[providers.Name]server.OAuthProvider, len(file))
	inlineSecret := false
	for key, e := range file {
		name := providers.Name(key)
		bad := func(format string, args ...any) error {
			return fmt.Errorf("oauth config %s: %s: %s", path, key, fmt.Sprintf(format, args...))
		}
		switch {
		case !name.Valid():
			return nil, bad("not a provider name (want one of %v)", providers.Names)
		case !slices.Contains(registered, name):
			return nil, bad("no provider of that name is registered: install its plugin in --plugin-dir")
		case e.ClientID == "":
			return nil, bad("client_id is required")
		case e.ClientSecret != "" && e.ClientSecretEnv != "":
			return nil, bad("set client_secret or client_secret_env, not both")
		case e.Kind != "" && e.Kind != "mail" && e.Kind != "files":
			return nil, bad("kind %q: want mail or files", e.Kind)
		}
		for field, u := range map[string]string{"auth_url": e.AuthURL, "token_url": e.TokenURL} {
			if err := checkEndpoint(u); err != nil {
				return nil, bad("%s: %v", field, err)
			}
		}
		secret := e.ClientSecret
		if e.ClientSecretEnv != "" {
			if secret = getenv(e.ClientSecretEnv); secret == "" {
				return nil, bad("client_secret_env: $%s is empty or unset", e.ClientSecretEnv)
			}
		}
		inlineSecret = inlineSecret || e.ClientSecret != ""
		out[name] = server.OAuthProvider{AuthURL: e.AuthURL, TokenURL: e.TokenURL, ClientID: e.ClientID,
			ClientSecret: secret, Scopes: e.Scopes, Kind: e.Kind, DisplayName: e.DisplayName, AuthParams: e.AuthParams}
	}
	if inlineSecret {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("oauth config: %w", err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("oauth config %s holds client secrets and is readable by others (mode %v): chmod 600 it, or use client_secret_env", path, fi.Mode().Perm())
		}
	}
	return out, nil
}

// checkEndpoint accepts an absolute https URL, or http on a loopback host.
func checkEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	switch {
	case u.Host == "":
		return errors.New("want an absolute URL")
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && (u.Hostname() == "localhost" || u.Hostname() == "127.0.0.1" || u.Hostname() == "::1"):
		return nil
	}
	return fmt.Errorf("%q: want https (http only on loopback)", raw)
}
