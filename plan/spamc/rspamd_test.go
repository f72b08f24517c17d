package spamc_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"svc.dev/svc/plan"
	"svc.dev/svc/plan/spamc"
)

// fakeRspamd answers /checkv2 as rspamd's normal worker does (its JSON, trimmed to the members
// svc reads plus a few it ignores): reject for GTUBE, no action otherwise.
func fakeRspamd(t *testing.T, answer func(msg []byte) (int, string)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/checkv2" {
			http.NotFound(w, r)
			return
		}
		msg, _ := io.ReadAll(r.Body)
		code, body := answer(msg)
		w.WriteHeader(code)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestRspamdReadsTheAction(t *testing.T) {
	url := fakeRspamd(t, func(msg []byte) (int, string) {
		if bytes.Contains(msg, []byte(gtube)) {
			return 200, `{"is_skipped":false,"score":15.5,"required_score":15.0,"action":"reject","thresholds":{"reject":15.0},"symbols":{"GTUBE":{"name":"GTUBE","score":0}},"message-id":"1@b.example"}`
		}
		return 200, `{"is_skipped":false,"score":-0.1,"required_score":15.0,"action":"no action","symbols":{}}`
	})
	c := &spamc.Rspamd{URL: url}
	v, err := c.Check(context.Background(), spamMessage())
	if err != nil || !v.Spam || v.String() != "rspamd: 15.5/15.0" {
		t.Errorf("spam: %+v %v", v, err)
	}
	v, err = c.Check(context.Background(), hamMessage())
	if err != nil || v.Spam {
		t.Errorf("ham: %+v %v", v, err)
	}
	for name, answer := range map[string]struct {
		code int
		body string
	}{
		"an error status": {500, `{"error":"internal"}`},
		"not JSON":        {200, `<html>`},
		"no action":       {200, `{"score":1}`},
	} {
		c := &spamc.Rspamd{URL: fakeRspamd(t, func([]byte) (int, string) { return answer.code, answer.body })}
		if _, err := c.Check(context.Background(), hamMessage()); !errors.Is(err, spamc.ErrProtocol) {
			t.Errorf("%s: err %v, want ErrProtocol", name, err)
		}
	}
}

// Past its Deadline a listing stops asking the filter: a slow filter cannot make a plan miss
// its time budget.
func TestObjectsStopsAskingAtTheDeadline(t *testing.T) {
	asked := 0
	url := fakeRspamd(t, func([]byte) (int, string) {
		asked++
		return 200, `{"score":20,"required_score":15,"action":"reject"}`
	})
	objs := []plan.Object{{ID: "a", Kind: "message"}, {ID: "b", Kind: "message"}}
	fetch := func(context.Context, string) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(spamMessage())), nil
	}
	l := spamc.Objects(&listing{objs}, fetch, &spamc.Rspamd{URL: url})
	l.Deadline = time.Now().Add(-time.Second)
	if _, err := l.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	if asked != 0 || l.Unchecked != 2 || l.Checked != 0 {
		t.Errorf("asked %d, unchecked %d, checked %d; want 0, 2, 0", asked, l.Unchecked, l.Checked)
	}
}
