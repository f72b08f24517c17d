package vendorfake

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// TokenAnswer is a token endpoint's answer: its status and JSON body.
type TokenAnswer struct {
	Status int
	Body   []byte
}

// Consent runs the authorization code flow with PKCE against a fake, for its shape test: a
// browser's GET of authURL for clientID (the fake consents at once and redirects back with a
// code), the code's exchange at tokenURL, then the same code exchanged again (which must be
// refused). It reports failures of the authorization step on t.
func Consent(t T, authURL, tokenURL, clientID string) (first, replay TokenAnswer) {
	t.Helper()
	raw := make([]byte, 32)
	rand.Read(raw)
	verifier := base64.RawURLEncoding.EncodeToString(raw)
	sum := sha256.Sum256([]byte(verifier))
	const redirect = "http://127.0.0.1:1/callback"
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect}, "state": {"st-1"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.Get(authURL + "?" + q.Encode())
	if err != nil {
		t.Fatalf("authorize: %v", err)
	}
	res.Body.Close()
	loc, _ := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusFound || loc == nil || !strings.HasPrefix(loc.String(), redirect) ||
		loc.Query().Get("state") != "st-1" || loc.Query().Get("code") == "" {
		t.Fatalf("authorize: %d, Location %q", res.StatusCode, res.Header.Get("Location"))
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {redirect},
		"client_id": {clientID}, "code_verifier": {verifier}}
	post := func() TokenAnswer {
		res, err := http.PostForm(tokenURL, form)
		if err != nil {
			t.Fatalf("token: %v", err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return TokenAnswer{Status: res.StatusCode, Body: b}
	}
	return post(), post()
}
