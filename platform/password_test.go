package platform_test

import (
	"strings"
	"testing"

	"svc.dev/svc/platform"
)

func TestPasswordHash(t *testing.T) {
	p := platform.PasswordParams{Memory: 64, Time: 1, Threads: 1}
	h, err := platform.HashPassword("correct horse", p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=64,t=1,p=1$") || strings.Contains(h, "correct horse") {
		t.Fatalf("hash %q", h)
	}
	h2, _ := platform.HashPassword("correct horse", p)
	if h == h2 {
		t.Fatal("two hashes of one password are equal: the salt is not random")
	}
	if !platform.CheckPassword(h, "correct horse") {
		t.Fatal("the right password does not check")
	}
	for _, bad := range []string{"", "correct hors", "correct horse "} {
		if platform.CheckPassword(h, bad) {
			t.Fatalf("%q checks", bad)
		}
	}
	for _, broken := range []string{"", "$argon2i$v=19$m=64,t=1,p=1$c2FsdA$aGFzaA", h[:len(h)-5] + "!!!!!", "$argon2id$v=18$" + h[16:]} {
		if platform.CheckPassword(broken, "correct horse") {
			t.Fatalf("broken hash %q checks", broken)
		}
	}
}

func TestDefaultPasswordParamsAreOWASP(t *testing.T) {
	if p := platform.DefaultPasswordParams; p.Memory < 19*1024 || p.Time < 2 {
		t.Fatalf("default argon2id parameters %+v are below the OWASP minimum", p)
	}
}
