package platform_test

import (
	"errors"
	"testing"

	"pgregory.net/rapid"

	"svc.dev/svc/platform"
)

func TestCursorProperties(t *testing.T) {
	key := make([]byte, 32)
	c := platform.NewCursors(key)
	rapid.Check(t, func(t *rapid.T) {
		binding := rapid.String().Draw(t, "binding")
		after := rapid.String().Draw(t, "after")
		tok := c.Seal(binding, after)

		// Round trip.
		got, err := c.Open(binding, tok)
		if err != nil || got != after {
			t.Fatalf("Open(Seal(%q)) = %q, %v", after, got, err)
		}
		// Any other binding is refused.
		other := rapid.String().Filter(func(s string) bool { return s != binding }).Draw(t, "other")
		if _, err := c.Open(other, tok); !errors.Is(err, platform.ErrInvalidCursor) {
			t.Fatalf("opened with binding %q instead of %q", other, binding)
		}
		// Any change to the token is refused.
		b := []byte(tok)
		i := rapid.IntRange(0, len(b)-1).Draw(t, "i")
		b[i] ^= byte(rapid.IntRange(1, 255).Draw(t, "x"))
		if got, err := c.Open(binding, string(b)); err == nil && got != after {
			t.Fatalf("altered token %q opened to %q", b, got)
		} else if err == nil {
			// Base64 has bits that do not decode (the last character's low bits), so a change
			// there may decode to the same bytes; that is the same cursor, not a forgery.
			return
		}
		// A token sealed with another key is refused.
		other2 := platform.NewCursors(append([]byte{1}, key[1:]...))
		if _, err := other2.Open(binding, tok); err == nil {
			t.Fatal("opened with another key")
		}
	})
}
