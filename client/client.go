package client

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"connectrpc.com/connect"

	"svc.dev/svc/gen/svc/v1/svcv1connect"
)

// Credential is how a client authenticates: an [APIKey] or a [Session].
type Credential interface {
	apply(h http.Header)
}

type noCredential struct{}

func (noCredential) apply(http.Header) {}

// APIKey is a developer API key (sk_test_... or sk_live_...), sent as Authorization: Bearer.
type APIKey string

func (k APIKey) apply(h http.Header) { h.Set("Authorization", "Bearer "+string(k)) }

// Session is an end user's svc_session cookie value. TestMode acts on the user's test tenant
// (the Svc-Mode: test header), as the console does when a user reviews what a test-mode
// application planned.
type Session struct {
	Cookie   string
	TestMode bool
}

func (s Session) apply(h http.Header) {
	h.Add("Cookie", (&http.Cookie{Name: "svc_session", Value: s.Cookie}).String())
	if s.TestMode {
		h.Set("Svc-Mode", "test")
	}
}

// Options configure a Client; the zero value (or nil) means defaults.
type Options struct {
	// HTTPClient sends the requests (default: a client over http.DefaultTransport).
	HTTPClient *http.Client
	// ConnectionID is the connection (cxn_...) an API key acts through; it is filled into every
	// request that has a connection_id field left unset. Ignored with a Session.
	ConnectionID string
	// Retry is the retry policy (default DefaultRetryPolicy). MaxAttempts 1 disables retries.
	Retry *RetryPolicy
	// UserAgent is sent as User-Agent (default "svc-go-client").
	UserAgent string
}

// Client calls the hosted API. Its service fields are safe for concurrent use.
type Client struct {
	Account      svcv1connect.AccountServiceClient
	Billing      svcv1connect.BillingServiceClient
	Connect      svcv1connect.ConnectServiceClient
	Connections  svcv1connect.ConnectionServiceClient
	Creator      svcv1connect.CreatorServiceClient
	Destinations svcv1connect.DestinationServiceClient
	Developer    svcv1connect.DeveloperServiceClient
	Events       svcv1connect.EventServiceClient
	Webhooks     svcv1connect.WebhookServiceClient
	Executions   svcv1connect.ExecutionServiceClient
	Intel        svcv1connect.IntelServiceClient
	Jobs         svcv1connect.JobServiceClient
	Plans        svcv1connect.PlanServiceClient
	Receipts     svcv1connect.ReceiptServiceClient
	Sources      svcv1connect.SourceServiceClient
	Usage        svcv1connect.UsageServiceClient
	Vault        svcv1connect.VaultServiceClient

	base string
	hc   *http.Client
	ic   *interceptor
}

// New returns a client of the API at baseURL (for example https://api.example.com, without
// /v1) authenticating with cred. A nil cred sends no credential: only the public endpoints
// (sign-up, sign-in, the receipt key set) answer such a client.
func New(baseURL string, cred Credential, opts *Options) (*Client, error) {
	if opts == nil {
		opts = &Options{}
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q is not an http(s) URL", baseURL)
	}
	if cred == nil {
		cred = noCredential{}
	}
	base := strings.TrimRight(baseURL, "/")
	inner := opts.HTTPClient
	if inner == nil {
		inner = &http.Client{}
	}
	ua := opts.UserAgent
	if ua == "" {
		ua = "svc-go-client"
	}
	hc := &http.Client{Transport: credTransport{cred: cred, ua: ua, next: inner.Transport}, Timeout: inner.Timeout,
		CheckRedirect: inner.CheckRedirect, Jar: inner.Jar}
	ic := &interceptor{retry: opts.Retry.orDefault()}
	if _, ok := cred.(APIKey); ok {
		ic.connectionID = opts.ConnectionID
	}
	o := connect.WithInterceptors(ic)
	return &Client{
		Account:      svcv1connect.NewAccountServiceClient(hc, base, o),
		Billing:      svcv1connect.NewBillingServiceClient(hc, base, o),
		Connect:      svcv1connect.NewConnectServiceClient(hc, base, o),
		Connections:  svcv1connect.NewConnectionServiceClient(hc, base, o),
		Creator:      svcv1connect.NewCreatorServiceClient(hc, base, o),
		Destinations: svcv1connect.NewDestinationServiceClient(hc, base, o),
		Developer:    svcv1connect.NewDeveloperServiceClient(hc, base, o),
		Events:       svcv1connect.NewEventServiceClient(hc, base, o),
		Webhooks:     svcv1connect.NewWebhookServiceClient(hc, base, o),
		Executions:   svcv1connect.NewExecutionServiceClient(hc, base, o),
		Intel:        svcv1connect.NewIntelServiceClient(hc, base, o),
		Plans:        svcv1connect.NewPlanServiceClient(hc, base, o),
		Receipts:     svcv1connect.NewReceiptServiceClient(hc, base, o),
		Sources:      svcv1connect.NewSourceServiceClient(hc, base, o),
		Usage:        svcv1connect.NewUsageServiceClient(hc, base, o),
		Jobs:         svcv1connect.NewJobServiceClient(hc, base, o),
		Vault:        svcv1connect.NewVaultServiceClient(hc, base, o),
		base:         base,
		hc:           hc,
		ic:           ic,
	}, nil
}

// BaseURL is the API's base URL, without a trailing slash.
func (c *Client) BaseURL() string { return c.base }

// ConnectionID is the default connection of an API key client ("" with a session).
func (c *Client) ConnectionID() string { return c.ic.connectionID }

// credTransport adds the credential and User-Agent to every request.
type credTransport struct {
	cred Credential
	ua   string
	next http.RoundTripper
}

func (t credTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	t.cred.apply(r.Header)
	if r.Header.Get("User-Agent") == "" {
		r.Header.Set("User-Agent", t.ua)
	}
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	res, err := next.RoundTrip(r)
	if err == nil {
		note(r, res)
	}
	return res, err
}
