package plugin

import (
	"strings"
	"testing"

	"svc.dev/svc/providers/internal/pluginpb"
)

// The host takes nothing from a credentials report but credentials: a plugin cannot move a
// source's endpoint, or fill its sealed configuration, through one.
func TestCredentialReportsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		cfg map[string]string
		ok  bool
	}{
		{map[string]string{"access_token": "a", "refresh_token": "r", "token_type": "Bearer", "expiry": "2026-11-26T22:00:00Z"}, true},
		{map[string]string{"access_token": "a"}, true},
		{map[string]string{}, false},
		{map[string]string{"access_token": "a", "endpoint": "https://elsewhere.example"}, false},
		{map[string]string{"client_secret": "s"}, false},
		{map[string]string{"access_token": strings.Repeat("a", 16385)}, false},
	} {
		err := validate(&pluginpb.WatchCredentialsResponse{Config: tc.cfg})
		if (err == nil) != tc.ok {
			t.Errorf("%v: valid = %v, want %v (%v)", tc.cfg, err == nil, tc.ok, err)
		}
	}
}
