package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"svc.dev/svc/platform/webhook"
	"svc.dev/svc/providers"
)

// unsubscribeTimeout bounds one one-click unsubscribe request.
const unsubscribeTimeout = 10 * time.Second

// unsubscriber sends RFC 8058 one-click unsubscribe requests for live executions. Requests go
// to the senders' servers, chosen by whoever sent the mail, so they get the webhook delivery's
// guard against server-side request forgery (checked on the address actually dialled), no
// redirects, no cookies, a 10 s limit, and nothing from the user but the POST the RFC defines.
type unsubscriber struct {
	client *http.Client
	guard  *webhook.Guard
}

func newUnsubscriber(dev bool, tlsConfig *tls.Config) *unsubscriber {
	g := &webhook.Guard{AllowLoopback: dev}
	dialer := &net.Dialer{Timeout: unsubscribeTimeout, Control: g.Control}
	tr := &http.Transport{Proxy: nil, DialContext: dialer.DialContext, TLSClientConfig: tlsConfig,
		TLSHandshakeTimeout: unsubscribeTimeout, ResponseHeaderTimeout: unsubscribeTimeout, MaxIdleConnsPerHost: 2}
	return &unsubscriber{guard: g, client: &http.Client{Transport: tr, Timeout: unsubscribeTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// send posts "List-Unsubscribe=One-Click" to target. A refused address or a 4xx answer is a
// permanent error; a network failure, a 429 or a 5xx wraps providers.ErrTransient (retried).
func (u *unsubscriber) send(ctx context.Context, target string) error {
	if err := u.guard.CheckURL(ctx, target); err != nil {
		return fmt.Errorf("unsubscribe at %s: %w", target, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader("List-Unsubscribe=One-Click"))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", "svc-unsubscribe/1")
	res, err := u.client.Do(req)
	if err != nil {
		if errors.Is(err, webhook.ErrBlockedAddress) {
			return fmt.Errorf("unsubscribe at %s: %w", target, err)
		}
		return fmt.Errorf("unsubscribe at %s: %w: %w", target, providers.ErrTransient, err)
	}
	io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	switch {
	case res.StatusCode >= 200 && res.StatusCode < 300:
		return nil
	case res.StatusCode == http.StatusTooManyRequests || res.StatusCode >= 500:
		return fmt.Errorf("unsubscribe at %s: HTTP %d: %w", target, res.StatusCode, providers.ErrTransient)
	}
	return fmt.Errorf("unsubscribe at %s: the sender answered HTTP %d", target, res.StatusCode)
}
