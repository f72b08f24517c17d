package vendorhttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"golang.org/x/time/rate"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/vendorhttp"
)

// A vendor connector builds its client from the source's configuration:
// the token the connect flow stored (and the OAuth client to refresh it),
// pacing at the vendor's published quota, and the vendor's way of saying
// "slow down".
func Example() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Header.Get("Authorization") != "")
	}))
	defer api.Close()

	creds, err := vendorhttp.CredentialsFromConfig(providers.Config{
		"access_token": "token-from-the-connect-flow", "token_type": "Bearer",
		"expiry": time.Now().Add(time.Hour).Format(time.RFC3339),
	}, nil)
	if err != nil {
		panic(err)
	}
	client := vendorhttp.NewClient(vendorhttp.Options{
		Credentials: creds,
		Limiter:     rate.NewLimiter(10, 10), // the vendor's quota: 10 requests/s
	})
	resp, err := client.Get(api.URL)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	fmt.Println(resp.StatusCode)
	// Output: 200
}
