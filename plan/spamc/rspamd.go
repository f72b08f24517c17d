package spamc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Rspamd talks to one rspamd over its HTTP protocol (the normal worker's /checkv2).
type Rspamd struct {
	// URL is the worker's base URL, e.g. http://127.0.0.1:11333.
	URL string
	// Password is sent as the Password header when set (rspamd's controller password).
	Password string
	// Timeout bounds one check; zero means 30 s.
	Timeout time.Duration
	// HTTP is the client (default http.DefaultClient).
	HTTP *http.Client
}

// rspamdReply is the part of /checkv2's JSON answer a verdict needs.
type rspamdReply struct {
	Action        string   `json:"action"`
	Score         *float64 `json:"score"`
	RequiredScore float64  `json:"required_score"`
	IsSkipped     bool     `json:"is_skipped"`
}

// Check asks rspamd about msg. Its action decides: "reject", "add header" and "rewrite subject"
// are spam; "no action", "greylist" and "soft reject" (rate limits, temporary refusals) are not.
func (r *Rspamd) Check(ctx context.Context, msg []byte) (Verdict, error) {
	if len(msg) > MaxMessageBytes {
		return Verdict{Skipped: true, Filter: "rspamd"}, nil
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(r.URL, "/")+"/checkv2", bytes.NewReader(msg))
	if err != nil {
		return Verdict{}, fmt.Errorf("rspamd %s: %w", r.URL, err)
	}
	if r.Password != "" {
		req.Header.Set("Password", r.Password)
	}
	hc := r.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Verdict{}, fmt.Errorf("rspamd %s: %w", r.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Verdict{}, fmt.Errorf("rspamd %s: %w", r.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return Verdict{}, fmt.Errorf("%w: rspamd answered %s", ErrProtocol, resp.Status)
	}
	var rep rspamdReply
	if err := json.Unmarshal(body, &rep); err != nil {
		return Verdict{}, fmt.Errorf("%w: rspamd answer: %v", ErrProtocol, err)
	}
	if rep.Score == nil || rep.Action == "" {
		return Verdict{}, fmt.Errorf("%w: rspamd answer without action or score", ErrProtocol)
	}
	v := Verdict{Score: *rep.Score, Threshold: rep.RequiredScore, Skipped: rep.IsSkipped, Filter: "rspamd"}
	switch rep.Action {
	case "reject", "add header", "rewrite subject":
		v.Spam = !rep.IsSkipped
	}
	return v, nil
}
