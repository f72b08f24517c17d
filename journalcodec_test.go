package svc

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
)

func TestJournalCodec(t *testing.T) {
	full := execute.Transition{AssetID: "ast_0004QPH36N8EDQ3WWXDBBFYS2A", From: svcv1.StepState_STEP_STATE_VERIFYING,
		To: svcv1.StepState_STEP_STATE_VAULT_COMMITTED, Step: "commit", Status: "ok", At: time.Date(2026, 11, 25, 6, 30, 1, 123456789, time.UTC),
		VaultID: "vlt_01M88MF478BZETF13VH6D5WN0A", VaultSHA256: "f0e8f2d98e02a4110d4f5d27103e079212d10a47bc5878c9972ff18572a4bc83",
		Bytes: 8243, ResultID: "res_1", Restorable: true, Error: "ünïcode error\x00with nul", Path: "a/b/c.eml"}
	rendered := full
	rendered.Rendered = "mime_rerendered"
	for _, tr := range []execute.Transition{full, rendered, {AssetID: "ast_1", To: svcv1.StepState_STEP_STATE_SELECTED, Step: "select", Status: "ok"}, {}} {
		b := encodeTransition(nil, tr)
		got, err := decodeTransition(b)
		if err != nil || got != tr {
			t.Fatalf("round trip of %+v: %+v, %v", tr, got, err)
		}
		// Every proper prefix is refused, never read as another entry.
		for n := range len(b) {
			if _, err := decodeTransition(b[:n]); !errors.Is(err, errBadEntry) {
				t.Fatalf("prefix of %d/%d bytes: %v", n, len(b), err)
			}
		}
		if _, err := decodeTransition(append(b, 0)); !errors.Is(err, errBadEntry) {
			t.Fatalf("a trailing byte: %v", err)
		}
	}
	// An entry without Rendered is the journalV2 entry it always was.
	if b := encodeTransition(nil, full); b[0] != journalV2 {
		t.Fatalf("an entry without Rendered is written as version %d", b[0])
	}
	// Entries journaled as JSON before the binary form still read.
	old, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := decodeTransition(old); err != nil || got != full {
		t.Fatalf("JSON entry: %+v, %v", got, err)
	}
	// A usual entry (a step without results) takes less than half the room of its JSON.
	usual := execute.Transition{AssetID: "ast_0004QPH36N8EDQ3WWXDBBFYS2A", From: 2, To: 3, Step: "fetch", Status: "ok", At: full.At}
	if js, _ := json.Marshal(usual); len(encodeTransition(nil, usual)) >= len(js)/2 {
		t.Errorf("binary entry %d bytes, JSON %d: expected less than half", len(encodeTransition(nil, usual)), len(js))
	}
}

func FuzzJournalCodec(f *testing.F) {
	f.Add(encodeTransition(nil, execute.Transition{AssetID: "ast_1", Step: "fetch", Status: "ok", At: time.Unix(1, 2)}))
	f.Add([]byte(`{"AssetID":"ast_1","From":1,"To":2}`))
	f.Add([]byte{journalV2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := decodeTransition(b)
		if err != nil || len(b) == 0 || (b[0] != journalV2 && b[0] != journalV3) {
			return
		}
		// What decodes re-encodes to the same bytes (one form per entry) when its time is
		// representable; either way it decodes to the same transition again.
		again, err := decodeTransition(encodeTransition(nil, tr))
		if err != nil || again != tr {
			t.Fatalf("%+v re-read as %+v, %v", tr, again, err)
		}
	})
}
