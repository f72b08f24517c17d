package plan

import (
	"hash/maphash"
	"testing"
)

// The heavy-hitters summary finds the addresses most mail is addressed to among many one-off
// ones, in at most k counters.
func TestHeavyHittersFindsTheOwnersAddresses(t *testing.T) {
	h := heavyHitters{k: 64, counts: map[uint64]int{}}
	seed := maphash.MakeSeed()
	owner, list := maphash.String(seed, "me@home.example"), maphash.String(seed, "dev@lists.example")
	for i := range 5000 {
		switch {
		case i%10 == 0:
			h.add(owner)
		case i%25 == 0:
			h.add(list)
		default:
			h.add(uint64(i) << 20) // a stranger's one-off recipient
		}
		if len(h.counts) > h.k {
			t.Fatalf("%d counters, more than k=%d", len(h.counts), h.k)
		}
	}
	if !h.frequent(owner, 0.01) || !h.frequent(list, 0.01) {
		t.Errorf("owner %d, list %d of %d: not frequent", h.counts[owner], h.counts[list], h.n)
	}
	if h.frequent(uint64(4999)<<20, 0.01) || h.frequent(12345, 0.01) {
		t.Error("a one-off recipient is frequent")
	}
}

func TestPaddedTag(t *testing.T) {
	for s, want := range map[string]bool{
		"Online Doctors will fill your Prescription Now!!!                QEEB": true,
		"*You CAN have the best rate*             21570":                        true,
		"Re: meeting tomorrow": false,
		"Table:     a      b":  true,
		"          x":          false, // nothing before the padding
		"Weekly report":        false,
		"Subject with a long tail     averyveryverylongwordindeed": false,
	} {
		if got := paddedTag(s); got != want {
			t.Errorf("paddedTag(%q) = %v, want %v", s, got, want)
		}
	}
}
