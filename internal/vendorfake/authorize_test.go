package vendorfake

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"golang.org/x/oauth2"
)

// The fake's authorization endpoint and authorization_code grant behave as an OAuth 2.0
// server with PKCE: a code is exchanged once, with its redirect URI and its verifier, and the
// tokens it mints are accepted by the API and refresh.
func TestAuthorizeAndExchange(t *testing.T) {
	b := NewBase()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /authorize", b.Authorize(ClientID))
	mux.HandleFunc("POST /token", b.Token)
	mux.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) {
		if b.Admit(w, r, 1) {
			w.WriteHeader(204)
		}
	})
	ts := httptest.NewServer(mux)
	defer ts.Close()
	conf := &oauth2.Config{ClientID: ClientID, ClientSecret: ClientSecret, RedirectURL: "http://127.0.0.1:1/callback",
		Endpoint: oauth2.Endpoint{AuthURL: ts.URL + "/authorize", TokenURL: ts.URL + "/token", AuthStyle: oauth2.AuthStyleInParams}}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	authorize := func(verifier string) string {
		t.Helper()
		res, err := noFollow.Get(conf.AuthCodeURL("st-1", oauth2.S256ChallengeOption(verifier)))
		if err != nil || res.StatusCode != http.StatusFound {
			t.Fatalf("authorize: %v %v", err, res)
		}
		loc, _ := url.Parse(res.Header.Get("Location"))
		if loc.Query().Get("state") != "st-1" || loc.Query().Get("code") == "" {
			t.Fatalf("redirect: %s", loc)
		}
		return loc.Query().Get("code")
	}
	ctx := context.Background()
	verifier := oauth2.GenerateVerifier()

	// A wrong verifier uses the code up.
	code := authorize(verifier)
	var re *oauth2.RetrieveError
	if _, err := conf.Exchange(ctx, code, oauth2.VerifierOption(oauth2.GenerateVerifier())); !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
		t.Fatalf("wrong verifier: %v", err)
	}
	if _, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier)); !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
		t.Fatalf("a used code: %v", err)
	}
	code = authorize(verifier)
	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil || tok.AccessToken == "" || tok.RefreshToken == "" {
		t.Fatalf("exchange: %v %+v", err, tok)
	}
	req, _ := http.NewRequest("GET", ts.URL+"/api", nil)
	tok.SetAuthHeader(req)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 204 {
		t.Fatalf("the minted token: %v %v", err, res)
	}
	fresh, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil || fresh.AccessToken == tok.AccessToken {
		t.Fatalf("refresh: %v", err)
	}
	// A malformed authorization request (no PKCE) is refused.
	res, err := noFollow.Get(conf.AuthCodeURL("st-2"))
	if err != nil || res.StatusCode != http.StatusBadRequest {
		t.Fatalf("without PKCE: %v %v", err, res)
	}
}

// A code is redeemed only by the client it was issued to.
func TestExchangeChecksClient(t *testing.T) {
	g := NewGrants("x", "a", "r")
	verifier := oauth2.GenerateVerifier()
	code := func() string {
		t.Helper()
		q := url.Values{"response_type": {"code"}, "client_id": {"app-1"}, "redirect_uri": {"http://127.0.0.1:1/cb"}, "state": {"s"},
			"code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"}}
		rec := httptest.NewRecorder()
		g.Authorize("app-1")(rec, httptest.NewRequest("GET", "/authorize?"+q.Encode(), nil))
		loc, _ := url.Parse(rec.Header().Get("Location"))
		return loc.Query().Get("code")
	}
	redeem := func(client, code string) bool {
		r := httptest.NewRequest("POST", "/token", nil)
		r.PostForm = url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {"http://127.0.0.1:1/cb"},
			"client_id": {client}, "code_verifier": {verifier}}
		_, _, ok := g.Exchange(r)
		return ok
	}
	if redeem("app-2", code()) {
		t.Error("another client redeemed the code")
	}
	if !redeem("app-1", code()) {
		t.Error("its client could not redeem the code")
	}
}
