package mail

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// ids scans by hand what this expression finds; the two must agree on any value.
var msgIDPattern = regexp.MustCompile(`<([^<>\s]+)>`)

// idsByPattern is ids as it was, with the expression.
func idsByPattern(v string) []string {
	var out []string
	for _, m := range msgIDPattern.FindAllStringSubmatch(v, 100) {
		out = append(out, m[1])
	}
	if len(out) == 0 {
		if f := strings.Fields(v); len(f) > 0 && strings.Contains(f[0], "@") {
			out = append(out, strings.Trim(f[0], "<>"))
		}
	}
	return out
}

func TestIDsAgreeWithThePattern(t *testing.T) {
	for _, v := range []string{"", "<a@b>", "<<a@b>>", "<a b@c> <d@e>", "x <a@b><c@d> y", "<>", "<a\t@b>", "<a@b", "a@b>", "<a<b@c>", "<é@ü>", "<\xff@x>"} {
		if got, want := ids(v), idsByPattern(v); !slices.Equal(got, want) {
			t.Errorf("ids(%q) = %q, the pattern finds %q", v, got, want)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		v := rapid.StringOf(rapid.SampledFrom([]rune{'<', '>', ' ', '\t', '\r', '\n', '\f', 'a', '@', '.', 'é', '\v'})).Draw(t, "v")
		if want := idsByPattern(v); !slices.Equal(ids(v), want) {
			t.Fatalf("ids(%q) = %q, the pattern finds %q", v, ids(v), want)
		}
	})
}
