package connectflow

import (
	"maps"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"svc.dev/svc/providers"
)

// OAuthProvider is how svc asks an end user's permission at a provider when they connect a
// source of that provider: the OAuth 2.0 authorization code flow with PKCE (S256). It has the
// fields of server.OAuthProvider, which converts to it.
type OAuthProvider struct {
	// AuthURL and TokenURL are the provider's authorization and token endpoints.
	AuthURL, TokenURL string
	// ClientID and ClientSecret are svc's client credentials at the provider.
	ClientID, ClientSecret string
	// AuthParams are extra parameters of the authorization URL (default DefaultAuthParams).
	AuthParams map[string]string
	// Scopes are the provider scopes asked for.
	Scopes []string
	// Kind is the kind of source the provider gives ("mail", "files").
	Kind string
	// DisplayName names the provider to end users.
	DisplayName string
}

// DefaultAuthParams are the authorization URL parameters a vendor needs to issue a refresh
// token (Microsoft's comes with the offline_access scope instead).
var DefaultAuthParams = map[providers.Name]map[string]string{
	providers.VendorAMail:  {"access_type": "offline", "prompt": "consent"},
	providers.VendorAFiles: {"access_type": "offline", "prompt": "consent"},
	providers.VendorCFiles: {"token_access_type": "offline"},
}

// oauthTimeout bounds a token exchange with a provider.
const oauthTimeout = 15 * time.Second

// authCodeOptions are the options of the authorization URL for provider name.
func (p OAuthProvider) authCodeOptions(name providers.Name, verifier string) []oauth2.AuthCodeOption {
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	params := p.AuthParams
	if params == nil {
		params = DefaultAuthParams[name]
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		opts = append(opts, oauth2.SetAuthURLParam(k, params[k]))
	}
	return opts
}

func (p OAuthProvider) oauth2(redirectURL string) *oauth2.Config {
	return &oauth2.Config{ClientID: p.ClientID, ClientSecret: p.ClientSecret, RedirectURL: redirectURL, Scopes: p.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: p.AuthURL, TokenURL: p.TokenURL}}
}

// AuthCodeURL is the authorization URL a browser is sent to for provider name, with the state
// and the PKCE challenge of verifier.
func (p OAuthProvider) AuthCodeURL(name providers.Name, redirectURL, state, verifier string) string {
	return p.oauth2(redirectURL).AuthCodeURL(state, p.authCodeOptions(name, verifier)...)
}

// oauthProvider returns the OAuth configuration of a provider, if it has a usable one.
func (f *Flow) oauthProvider(name providers.Name) (OAuthProvider, bool) {
	p, ok := f.cfg.OAuth[name]
	return p, ok && p.AuthURL != "" && p.TokenURL != "" && p.ClientID != ""
}

// providerLabel names a provider to end users.
func (f *Flow) providerLabel(name providers.Name) string {
	if p, ok := f.cfg.OAuth[name]; ok && p.DisplayName != "" {
		return p.DisplayName
	}
	words := strings.Split(string(name), "_")
	for i, w := range words {
		if len(w) == 1 {
			w = strings.ToUpper(w)
		}
		if w != "" {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, " ")
}

// errorCode keeps an OAuth error code printable and short ("access_denied"), since it is
// shown back to the user.
func errorCode(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() == 40 {
			break
		}
		if r == '_' || r == '-' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "error"
	}
	return b.String()
}
