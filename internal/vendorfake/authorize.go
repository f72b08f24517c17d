package vendorfake

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
)

// authCode is an authorization code Authorize issued: what its exchange must repeat.
type authCode struct {
	clientID, challenge, redirectURI string
}

// Authorize returns an OAuth 2.0 authorization endpoint (RFC 6749 section 4.1, with PKCE,
// RFC 7636) for the client clientID: a request with response_type=code, that client_id, a
// redirect_uri, a state and an S256 code_challenge is approved at once, as if the account's
// owner consented, and redirected back with a single-use code that Exchange redeems; a
// malformed one is 400. Every fake mounts it at its vendor's path (Google's fakes at GET
// /authorize, Graph's at GET /oauth2/v2.0/authorize, Dropbox's at GET /oauth2/authorize): a
// dev server (svc serve --dev) connects accounts of the fakes through it.
func (g *Grants) Authorize(clientID string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		back, err := url.Parse(q.Get("redirect_uri"))
		if err != nil || !back.IsAbs() || q.Get("response_type") != "code" || q.Get("client_id") != clientID ||
			q.Get("state") == "" || q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256" {
			oauthError(w, http.StatusBadRequest, "invalid_request")
			return
		}
		raw := make([]byte, 16)
		rand.Read(raw)
		code := "fake-code-" + hex.EncodeToString(raw)
		g.mu.Lock()
		if g.codes == nil {
			g.codes = map[string]authCode{}
		}
		g.codes[code] = authCode{clientID: clientID, challenge: q.Get("code_challenge"), redirectURI: q.Get("redirect_uri")}
		g.mu.Unlock()
		v := back.Query()
		v.Set("code", code)
		v.Set("state", q.Get("state"))
		back.RawQuery = v.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	}
}

// Exchange redeems the authorization code of a token request (the authorization_code grant;
// r's form parsed): the code is used up whatever happens, and must come from the client it was
// issued to (HTTP Basic or client_id in the form), with its redirect_uri and the PKCE verifier
// of its challenge. It mints a new grant's tokens (Mint); ok false means the answer is
// invalid_grant. Each fake writes its vendor's token answer around it.
func (g *Grants) Exchange(r *http.Request) (access, refresh string, ok bool) {
	client, _, basic := r.BasicAuth()
	if basic {
		client, _ = url.QueryUnescape(client) // RFC 6749 section 2.3.1 form-encodes it
	} else {
		client = r.PostForm.Get("client_id")
	}
	code := r.PostForm.Get("code")
	g.mu.Lock()
	c, found := g.codes[code]
	delete(g.codes, code)
	g.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	if !found || c.clientID != client || c.redirectURI != r.PostForm.Get("redirect_uri") ||
		base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
		return "", "", false
	}
	access, refresh = g.Mint()
	return access, refresh, true
}

// exchange answers an authorization_code grant as Google does: an access token and a refresh
// token for the fake's account.
func (b *Base) exchange(w http.ResponseWriter, r *http.Request) {
	access, refresh, ok := b.Exchange(r)
	if !ok {
		oauthError(w, http.StatusBadRequest, "invalid_grant")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	// Google's token response names no account (that takes an id_token and the openid scope):
	// the source is the token's own user, "me".
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": 3599,
		"refresh_token": refresh})
}
