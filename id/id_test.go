package id_test

import (
	"testing"
	"time"

	"svc.dev/svc/id"
)

func TestNewIsValidAndIncreasing(t *testing.T) {
	prev := ""
	for range 1000 {
		s := id.New("pln")
		if !id.Valid("pln", s) {
			t.Fatalf("%q is not a valid pln id", s)
		}
		if s <= prev {
			t.Fatalf("%q does not sort after %q", s, prev)
		}
		prev = s
	}
}

func TestValid(t *testing.T) {
	for s, want := range map[string]bool{
		"pln_01JD0000000000000000000000":  true,
		"pln_01JD000000000000000000000":   false, // 25 characters
		"pln_01JD000000000000000000000I":  false, // I is not in the alphabet
		"pln_01jd0000000000000000000000":  false, // lower case
		"exe_01JD0000000000000000000000":  false,
		"pln01JD00000000000000000000000":  false,
		"pln_01JD0000000000000000000000x": false,
	} {
		if got := id.Valid("pln", s); got != want {
			t.Errorf("Valid(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestDerive(t *testing.T) {
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	a := id.Derive("rev", at, "crs_1/2026-03")
	if !id.Valid("rev", a) {
		t.Fatalf("%q is not a valid rev id", a)
	}
	if b := id.Derive("rev", at, "crs_1/2026-03"); b != a {
		t.Fatalf("the same key gave %s, then %s", a, b)
	}
	if b := id.Derive("rev", at, "crs_1/2026-04"); b == a {
		t.Fatal("another key gave the same id")
	}
	if ts, err := id.Time(a); err != nil || !ts.Equal(at) {
		t.Fatalf("time %v, %v; want %v", ts, err, at)
	}
	if b := id.Derive("rev", time.Time{}, "x"); !id.Valid("rev", b) {
		t.Fatalf("zero time: %q", b)
	}
}
