package pagetoken

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"svc.dev/svc/providers"
)

// EncodeState returns an opaque page token carrying state (any JSON value)
// under a kind that names the provider and the listing ("onedrive.list"),
// for providers whose position is the vendor's own cursor or link.
func EncodeState(kind string, state any) (string, error) {
	b, err := json.Marshal(struct {
		K string `json:"k"`
		S any    `json:"s"`
	}{kind, state})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// DecodeState parses a token EncodeState made for the same kind into
// state. Any other token is an error wrapping providers.ErrInvalidArgument.
func DecodeState(kind, token string, state any) error {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return fmt.Errorf("page token: %w", providers.ErrInvalidArgument)
	}
	var t struct {
		K string          `json:"k"`
		S json.RawMessage `json:"s"`
	}
	if err := json.Unmarshal(b, &t); err != nil || t.K != kind {
		return fmt.Errorf("page token: not a %s token: %w", kind, providers.ErrInvalidArgument)
	}
	if err := json.Unmarshal(t.S, state); err != nil {
		return fmt.Errorf("page token: %v: %w", err, providers.ErrInvalidArgument)
	}
	return nil
}
