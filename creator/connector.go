package creator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"svc.dev/svc/id"
	"svc.dev/svc/mail"
)

// Connector reads one creator source into a ledger. Implementations: stripe, storefront,
// statement, inbox (NewConnector).
type Connector interface {
	// Check verifies the source's credential with a cheap authenticated call. A refused
	// credential is a *CredentialError (errors.Is ErrBadCredential); anything else is the
	// platform's or the network's failure.
	Check(ctx context.Context) error
	// Collect reads what the source holds, as observations, for earning periods from since on
	// (zero: everything). It must not change anything at the platform.
	Collect(ctx context.Context, since time.Time) (*Ledger, error)
}

// ErrBadCredential is matched by every *CredentialError.
var ErrBadCredential = errors.New("creator source credential refused")

// ErrUnknownKind is returned for a source kind that is not stripe, storefront, statement or inbox.
var ErrUnknownKind = errors.New("unknown creator source kind")

// CredentialError says why a source's credential was refused, in words for its owner.
type CredentialError struct {
	Kind   Kind
	Field  string // the credential field at fault ("api_key")
	Reason string
	Err    error // the platform's answer, when there was one
}

func (e *CredentialError) Error() string {
	s := fmt.Sprintf("%s source: %s: %s", e.Kind, e.Field, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is makes errors.Is(err, ErrBadCredential) hold.
func (e *CredentialError) Is(target error) bool { return target == ErrBadCredential }

// Unwrap returns the platform's answer.
func (e *CredentialError) Unwrap() error { return e.Err }

// MailReader gives the inbox connector the messages of a connected mail source.
type MailReader interface {
	// Messages returns the messages of the mail source (src_) read with mail.ReadDocument.
	Messages(ctx context.Context, mailSourceID string) ([]*mail.Document, error)
}

// Deps are what connectors need from their host. Zero fields take defaults.
type Deps struct {
	// HTTPClient makes platform requests (default: a client with a 30 s timeout).
	HTTPClient *http.Client
	// StripeURL is Stripe's API base (default Stripe's own); tests point it at stripe-mock.
	StripeURL string
	// StorefrontURL returns the admin API base of a shop domain (default
	// "https://<shop_domain>"); tests point it at a local fake.
	StorefrontURL func(shopDomain string) string
	// Mail reads an inbox source's mail.
	Mail MailReader
	// Uploads reads a statement source's accepted uploads.
	Uploads func(ctx context.Context, sourceID string) ([]Upload, error)
	// Home is the creator's home currency (default USD).
	Home string
}

func (d Deps) httpClient() *http.Client {
	if d.HTTPClient != nil {
		return d.HTTPClient
	}
	return &http.Client{Timeout: 30 * time.Second}
}

// Upload is an accepted statement upload.
type Upload struct {
	Name       string    `json:"name"` // its path relative to the source's statements ("2026/fanclub.csv")
	Data       []byte    `json:"data"`
	UploadedAt time.Time `json:"uploaded_at"`
}

// CreateRequest is POST /v1/creator/sources.
type CreateRequest struct {
	Kind        Kind        `json:"kind"`
	Label       string      `json:"label"`
	Credentials Credentials `json:"credentials"`
	SourceID    string      `json:"source_id"` // kind inbox: the connected mail source
}

// ValidationError is a request that cannot name a source; Field is the request field at fault.
type ValidationError struct {
	Field, Reason string
}

func (e *ValidationError) Error() string { return e.Field + ": " + e.Reason }

// NewSource validates a creation request and makes its source (status "pending"): the caller
// checks it (Check) before storing it.
func NewSource(req CreateRequest, now time.Time) (*Source, error) {
	s := &Source{Kind: req.Kind, Label: strings.TrimSpace(req.Label), Status: "pending", CreatedAt: now.UTC(),
		Credentials: req.Credentials, MailSourceID: req.SourceID}
	switch req.Kind {
	case KindStripe:
		if req.Credentials.APIKey == "" {
			return nil, &ValidationError{"credentials.api_key", "required for a stripe source"}
		}
		s.Domain = "stripe.com"
	case KindStorefront:
		if req.Credentials.ShopDomain == "" {
			return nil, &ValidationError{"credentials.shop_domain", "required for a storefront source"}
		}
		if req.Credentials.AccessToken == "" {
			return nil, &ValidationError{"credentials.access_token", "required for a storefront source"}
		}
		d := strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(req.Credentials.ShopDomain, "https://"), "http://"), "/"))
		if strings.ContainsAny(d, "/ @?#") || !strings.Contains(d, ".") {
			return nil, &ValidationError{"credentials.shop_domain", fmt.Sprintf("%q is not a shop domain such as example.myshopify.com", req.Credentials.ShopDomain)}
		}
		s.Credentials.ShopDomain, s.Domain = d, d
	case KindInbox:
		if !id.Valid("src", req.SourceID) {
			return nil, &ValidationError{"source_id", "an inbox source names the connected mail source (src_...) to scan"}
		}
	case KindStatement:
	default:
		return nil, &ValidationError{"kind", fmt.Sprintf("%q: %v (stripe, storefront, statement, inbox)", req.Kind, ErrUnknownKind)}
	}
	if s.Label == "" {
		s.Label = string(req.Kind)
		if s.Domain != "" {
			s.Label = s.Domain
		}
	}
	s.ID = id.NewAt("crs", now)
	return s, nil
}

// NewConnector returns the connector of a source.
func NewConnector(s *Source, d Deps) (Connector, error) {
	switch s.Kind {
	case KindStripe:
		return newStripe(s, d), nil
	case KindStorefront:
		return newStorefront(s, d), nil
	case KindStatement:
		return &statementConnector{src: s, deps: d}, nil
	case KindInbox:
		return &inboxConnector{src: s, deps: d}, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownKind, s.Kind)
}

// Check is the credential check a source gets at creation: its connector's Check.
func Check(ctx context.Context, s *Source, d Deps) error {
	c, err := NewConnector(s, d)
	if err != nil {
		return err
	}
	return c.Check(ctx)
}

type statementConnector struct {
	src  *Source
	deps Deps
}

func (c *statementConnector) Check(context.Context) error { return nil } // nothing to check: uploads are checked one by one

func (c *statementConnector) Collect(ctx context.Context, since time.Time) (*Ledger, error) {
	led := &Ledger{}
	if c.deps.Uploads == nil {
		return led, nil
	}
	ups, err := c.deps.Uploads(ctx, c.src.ID)
	if err != nil {
		return nil, err
	}
	known := map[string]string{}
	for _, u := range ups {
		opts := StatementOptions{Path: u.Name, SourceID: c.src.ID, ObservedAt: u.UploadedAt, Known: known}
		if isTermsFile(u.Name) {
			ts, err := ParseTerms(strings.NewReader(string(u.Data)), opts)
			if err != nil {
				led.Problems = append(led.Problems, err.Error())
				continue
			}
			led.Terms = append(led.Terms, ts...)
			continue
		}
		l, err := ParseStatement(strings.NewReader(string(u.Data)), opts)
		if err != nil { // accepted uploads parse; a rule change may refuse an old one
			led.Problems = append(led.Problems, err.Error())
			continue
		}
		for _, a := range l.Activity {
			known[a.Stream] = a.Currency
		}
		for _, a := range l.Activity {
			if since.IsZero() || !a.Period.Start.Before(Month(since).Start) {
				led.Activity = append(led.Activity, a)
			}
		}
		for k, s := range l.Streams {
			led.stream(k, s.Name, s.Domain, KindStatement, c.src.ID)
		}
	}
	return led, nil
}

type inboxConnector struct {
	src  *Source
	deps Deps
}

func (c *inboxConnector) Check(ctx context.Context) error {
	if c.deps.Mail == nil {
		return &CredentialError{Kind: KindInbox, Field: "source_id", Reason: "no mail reader is configured"}
	}
	if _, err := c.deps.Mail.Messages(ctx, c.src.MailSourceID); err != nil {
		return &CredentialError{Kind: KindInbox, Field: "source_id", Reason: "the mail source cannot be read", Err: err}
	}
	return nil
}

func (c *inboxConnector) Collect(ctx context.Context, since time.Time) (*Ledger, error) {
	docs, err := c.deps.Mail.Messages(ctx, c.src.MailSourceID)
	if err != nil {
		return nil, err
	}
	if !since.IsZero() {
		kept := docs[:0]
		for _, d := range docs {
			if d.Date.IsZero() || !d.Date.Before(since) {
				kept = append(kept, d)
			}
		}
		docs = kept
	}
	self := []string{}
	if s := mostAddressed(docs); s != "" {
		self = append(self, s)
	}
	return ReadInbox(docs, InboxOptions{SourceID: c.src.ID, Home: c.deps.Home, Self: self}), nil
}
