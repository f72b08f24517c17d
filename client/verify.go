package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"svc.dev/svc/platform/webhook"
	"svc.dev/svc/receipt"
)

// ReceiptKeysPath is where a server publishes the Ed25519 keys its receipts are signed with.
const ReceiptKeysPath = "/.well-known/svc-receipts.json"

// maxDocumentBytes bounds a receipt or key set read over REST.
const maxDocumentBytes = 64 << 20

// ReceiptJSON returns a receipt exactly as the server serves it (GET /v1/receipts/{id}): the
// bytes its signature was made over, for [receipt.Verify] or for keeping.
func (c *Client) ReceiptJSON(ctx context.Context, receiptID string) ([]byte, error) {
	path := "/v1/receipts/" + url.PathEscape(receiptID)
	if c.ic.connectionID != "" {
		path += "?connection_id=" + url.QueryEscape(c.ic.connectionID)
	}
	return c.getREST(ctx, path)
}

// ReceiptKeys returns the server's published receipt key set (a JWK set).
func (c *Client) ReceiptKeys(ctx context.Context) ([]byte, error) {
	return c.getREST(ctx, ReceiptKeysPath)
}

// VerifyReceipt fetches a receipt and the published keys and verifies the receipt offline
// with [receipt.Verify]: its canonical hash, and its Ed25519 signature by a published key. The
// error says which check failed.
func (c *Client) VerifyReceipt(ctx context.Context, receiptID string) (*receipt.Verified, error) {
	raw, err := c.ReceiptJSON(ctx, receiptID)
	if err != nil {
		return nil, err
	}
	keys, err := c.ReceiptKeys(ctx)
	if err != nil {
		return nil, err
	}
	v, err := receipt.Verify(raw, keys)
	if err != nil {
		return nil, fmt.Errorf("receipt %s: %w", receiptID, err)
	}
	return v, nil
}

// getREST GETs a document over REST, retried like a call without side effects.
func (c *Client) getREST(ctx context.Context, path string) ([]byte, error) {
	procedure := "GET " + path
	for attempt := 1; ; attempt++ {
		body, err := c.getOnce(ctx, procedure, path)
		if err == nil {
			return body, nil
		}
		var e *Error
		if !errors.As(err, &e) || attempt >= c.ic.retry.MaxAttempts || ctx.Err() != nil || !retryable(e, true) {
			return nil, err
		}
		d, ok := c.ic.retry.wait(attempt, e.RetryAfter)
		if !ok {
			return nil, err
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

func (c *Client) getOnce(ctx context.Context, procedure, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, &Error{Procedure: procedure, err: err}
	}
	req.Header.Set("Accept", "application/json")
	res, err := c.hc.Do(req)
	if err != nil {
		return nil, &Error{Procedure: procedure, err: err}
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxDocumentBytes+1))
	if err != nil {
		return nil, &Error{Procedure: procedure, err: err}
	}
	if res.StatusCode != http.StatusOK {
		return nil, fromResponse(procedure, res, body)
	}
	if len(body) > maxDocumentBytes {
		return nil, &Error{Procedure: procedure, err: fmt.Errorf("response larger than %d bytes", maxDocumentBytes)}
	}
	return body, nil
}

// Webhook signature errors, returned by VerifyWebhook (match with errors.Is).
var (
	// ErrWebhookNoSignature is returned when the delivery has no Svc-Signature v1 value.
	ErrWebhookNoSignature = webhook.ErrNoSignature
	// ErrWebhookBadSignatureHeader is returned when the Svc-Signature header is malformed.
	ErrWebhookBadSignatureHeader = webhook.ErrBadSignatureHeader
	// ErrWebhookTimestamp is returned when the signature's timestamp is outside the tolerance.
	ErrWebhookTimestamp = webhook.ErrSignatureTimestamp
	// ErrWebhookSignatureMismatch is returned when no v1 value matches any of the secrets.
	ErrWebhookSignatureMismatch = webhook.ErrSignatureMismatch
)

// WebhookSignatureHeader is the header a webhook delivery carries its signature in.
const WebhookSignatureHeader = webhook.HeaderSignature

// VerifyWebhook checks a webhook delivery: header is its Svc-Signature header, body the raw
// request body (read it before decoding), secrets the webhook's signing secrets (two during a
// rotation: either may match). The timestamp must be within 5 minutes of now. It uses the same
// code the server signs with.
func VerifyWebhook(header string, body []byte, now time.Time, secrets ...string) error {
	if len(secrets) == 0 {
		return errors.New("client: VerifyWebhook needs a secret")
	}
	var err error
	for _, s := range secrets {
		if err = webhook.Verify(header, body, s, now, webhook.Tolerance); err == nil {
			return nil
		}
		if !errors.Is(err, webhook.ErrSignatureMismatch) {
			return err
		}
	}
	return err
}
