package svc

import (
	"testing"
	"time"
)

func TestFinishedAtReadsOnlyWhatItNeeds(t *testing.T) {
	at := time.Date(2026, 11, 25, 7, 40, 1, 123456789, time.UTC)
	for _, raw := range []string{
		`{"charges":[],"executionId":"exe_1","finishedAt":"2026-11-25T07:40:01.123456789Z","objects":[{"a":1}]}`,
		`{"objects":[{"a":{"finishedAt":"1999-01-01T00:00:00Z"}}],"finishedAt":"2026-11-25T07:40:01.123456789Z"}`,
		// Only the top level counts; what follows finishedAt is not read (nor checked).
		`{"finishedAt":"2026-11-25T07:40:01.123456789Z","objects":[not json`,
	} {
		got, err := finishedAt([]byte(raw))
		if err != nil || !got.Equal(at) {
			t.Errorf("finishedAt(%s) = %v, %v", raw, got, err)
		}
	}
	if got, err := finishedAt([]byte(`{"objects":[]}`)); err != nil || !got.IsZero() {
		t.Errorf("no finishedAt: %v, %v", got, err)
	}
	for _, bad := range []string{``, `[]`, `{"finishedAt":12}`, `{"objects":[`} {
		if _, err := finishedAt([]byte(bad)); err == nil {
			t.Errorf("finishedAt(%q): no error", bad)
		}
	}
}
