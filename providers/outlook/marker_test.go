package outlook

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"maps"
	"testing"

	"svc.dev/svc/providers"
)

// TestMarkerRoundTrip: a marker gives back the deltaLinks it was made of,
// in both the short form and the whole-link form; a damaged one is refused.
func TestMarkerRoundTrip(t *testing.T) {
	d := map[string]string{
		"AAMkAGI=": deltaPath("AAMkAGI=") + "?$deltatoken=abc_DEF-123",
		"AQMkAD==": "/me/mailFolders('AQMkAD==')/messages/delta?$deltatoken=xyz&$select=id",
	}
	v, err := encodeDeltas(d)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeDeltas(v)
	if err != nil || !maps.Equal(got, d) {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	for _, bad := range []string{v + "x", v[:len(v)-3], "o1." + v[5:], ""} {
		if _, err := decodeDeltas(bad); !errors.Is(err, providers.ErrMarkerExpired) {
			t.Errorf("damaged marker %q accepted: %v", bad, err)
		}
	}
}

// TestMarkerTooLarge: a mailbox whose delta state does not fit a marker
// gets one of kind none, which Changes cannot follow (svc lists again).
func TestMarkerTooLarge(t *testing.T) {
	d := map[string]string{}
	for range 40 {
		b := make([]byte, 180)
		_, _ = rand.Read(b)
		id := base64.RawURLEncoding.EncodeToString(b[:90])
		d[id] = deltaPath(id) + "?$deltatoken=" + base64.RawURLEncoding.EncodeToString(b[90:])
	}
	p := &Provider{}
	m, err := p.marker(d)
	if err != nil || m.Kind != providers.MarkerNone {
		t.Fatalf("marker of 40 folders with random 120-character ids and tokens: %v (%d bytes), %v", m.Kind, len(m.Value), err)
	}
	if _, err := p.Changes(context.Background(), providers.ChangesRequest{Since: m}); !errors.Is(err, providers.ErrMarkerExpired) {
		t.Errorf("changes since a none marker: %v", err)
	}
	small := map[string]string{}
	for id, link := range d {
		small[id] = link
		if len(small) == 8 {
			break
		}
	}
	if m, _ := p.marker(small); m.Kind != providers.MarkerDeltaToken {
		t.Errorf("8 such folders do not fit a marker (%d bytes)", len(m.Value))
	}
}
