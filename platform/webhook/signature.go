package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Headers of a delivery request.
const (
	// HeaderSignature carries "t=<unix seconds>,v1=<hex>[,v1=<hex>]".
	HeaderSignature = "Svc-Signature"
	// HeaderWebhookID carries the webhook's whk_ id.
	HeaderWebhookID = "Svc-Webhook-Id"
	// HeaderDeliveryID carries the delivery's dlv_ id, the same on every attempt.
	HeaderDeliveryID = "Svc-Delivery-Id"
)

// Tolerance is how old a signature timestamp a receiver accepts (spec: 5 minutes).
const Tolerance = 5 * time.Minute

// SecretPrefix starts every webhook signing secret.
const SecretPrefix = "whsec_"

// Signature errors returned by Verify.
var (
	// ErrNoSignature is returned when the header is empty or has no v1 value.
	ErrNoSignature = errors.New("webhook signature: no v1 signature")
	// ErrBadSignatureHeader is returned when the header is not t=...,v1=... .
	ErrBadSignatureHeader = errors.New("webhook signature: malformed header")
	// ErrSignatureTimestamp is returned when the timestamp is outside the tolerance.
	ErrSignatureTimestamp = errors.New("webhook signature: timestamp outside tolerance")
	// ErrSignatureMismatch is returned when no v1 value matches the secret.
	ErrSignatureMismatch = errors.New("webhook signature: no matching signature")
)

// Sign returns the Svc-Signature header value for body sent at t: one v1 value per secret,
// in the order given. The signed text is the decimal unix time, a dot, then the raw body.
func Sign(t time.Time, body []byte, secrets ...string) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	var b strings.Builder
	b.WriteString("t=")
	b.WriteString(ts)
	for _, s := range secrets {
		b.WriteString(",v1=")
		b.WriteString(hex.EncodeToString(mac(s, ts, body)))
	}
	return b.String()
}

func mac(secret, ts string, body []byte) []byte {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(ts))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Verify checks a Svc-Signature header against the raw body with the receiver's secret, as a
// receiver written in Go would: some v1 value must be the HMAC-SHA256 of "t.body", and t must
// be within tolerance of now (older, or newer for clock skew). Unknown keys such as a future
// v2 are ignored.
func Verify(header string, body []byte, secret string, now time.Time, tolerance time.Duration) error {
	if header == "" {
		return ErrNoSignature
	}
	var ts string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrBadSignatureHeader
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			if sig, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, sig)
			}
		}
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrBadSignatureHeader
	}
	if len(sigs) == 0 {
		return ErrNoSignature
	}
	if d := now.Sub(time.Unix(unix, 0)); d > tolerance || d < -tolerance {
		return ErrSignatureTimestamp
	}
	want := mac(secret, ts, body)
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			return nil
		}
	}
	return ErrSignatureMismatch
}
