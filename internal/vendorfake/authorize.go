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
	challenge, redirectURI string
}

// Authorize serves an OAuth 2.0 authorization endpoint (RFC 6749 section 4.1, with PKCE,
// RFC 7636): a request with response_type=code, ClientID, a redirect_uri, a state and an S256
// code_challenge is approved at once, as if the account's owner consented, and redirected back
// with a single-use code; a malformed one is 400. Mount it at GET /authorize: a dev server
// (svc serve --dev) connects accounts of the fake through it.
func (b *Base) Authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	back, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || !back.IsAbs() || q.Get("response_type") != "code" || q.Get("client_id") != ClientID ||
		q.Get("state") == "" || q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256" {
		oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	raw := make([]byte, 16)
	rand.Read(raw)
	code := "fake-code-" + hex.EncodeToString(raw)
	b.mu.Lock()
	if b.codes == nil {
		b.codes = map[string]authCode{}
	}
	b.codes[code] = authCode{challenge: q.Get("code_challenge"), redirectURI: q.Get("redirect_uri")}
	b.mu.Unlock()
	v := back.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// exchange answers an authorization_code grant: the code is used up whatever happens, and must
// come with its redirect_uri and the PKCE verifier of its challenge; it mints an access token
// and a refresh token for the fake's account.
func (b *Base) exchange(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	c, ok := b.codes[r.PostForm.Get("code")]
	delete(b.codes, r.PostForm.Get("code"))
	b.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	if !ok || c.redirectURI != r.PostForm.Get("redirect_uri") || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
		oauthError(w, http.StatusBadRequest, "invalid_grant")
		return
	}
	access, refresh := b.Mint()
	w.Header().Set("Content-Type", "application/json")
	// Google's token response names no account (that takes an id_token and the openid scope):
	// the source is the token's own user, "me".
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": 3599,
		"refresh_token": refresh})
}
