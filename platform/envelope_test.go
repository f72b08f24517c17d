package platform_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"svc.dev/svc/platform"
)

// A value sealed with an envelope opens with the same key-encryption key and aad only; the
// wrapping key's id is recorded and does not reveal the key.
func TestEnvelopeSealOpen(t *testing.T) {
	ctx := context.Background()
	a, err := platform.NewLocalEnvelope(bytes.Repeat([]byte{1}, 32))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := platform.NewLocalEnvelope(bytes.Repeat([]byte{2}, 32))
	if a.KeyID() == b.KeyID() || len(a.KeyID()) != len("local:")+16 {
		t.Fatalf("key ids %s, %s", a.KeyID(), b.KeyID())
	}
	secret := []byte(`{"keys":[{"d":"private"}]}`)
	sealed, err := platform.SealWithEnvelope(ctx, a, secret, []byte("svc/secrets/x"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("private")) {
		t.Fatal("the sealed value shows its plaintext")
	}
	if id, err := platform.EnvelopeKeyID(sealed); err != nil || id != a.KeyID() {
		t.Fatalf("envelope key id %q, %v", id, err)
	}
	got, err := platform.OpenWithEnvelope(ctx, a, sealed, []byte("svc/secrets/x"))
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("open: %q, %v", got, err)
	}
	if _, err := platform.OpenWithEnvelope(ctx, b, sealed, []byte("svc/secrets/x")); !errors.Is(err, platform.ErrUnwrap) {
		t.Fatalf("another key: %v", err)
	}
	if _, err := platform.OpenWithEnvelope(ctx, a, sealed, []byte("svc/secrets/y")); err == nil {
		t.Fatal("opened under another aad")
	}
	again, _ := platform.SealWithEnvelope(ctx, a, secret, []byte("svc/secrets/x"))
	if bytes.Equal(again, sealed) {
		t.Fatal("two seals of one value are equal: the data key is not fresh")
	}
	tampered := bytes.Replace(sealed, []byte(`"data":"`), []byte(`"data":"A`), 1)
	if _, err := platform.OpenWithEnvelope(ctx, a, tampered, []byte("svc/secrets/x")); err == nil {
		t.Fatal("a tampered envelope opened")
	}
}
