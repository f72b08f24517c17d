package gmail

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	gm "google.golang.org/api/gmail/v1"
	"google.golang.org/api/option"

	"svc.dev/svc/mail"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/google"
	"svc.dev/svc/providers/internal/keylock"
	"svc.dev/svc/providers/pagetoken"
)

var caps = []providers.Capability{providers.CapTrash, providers.CapUntrash, providers.CapWrite, providers.CapTrashBatch, providers.CapFetchBatch, providers.CapCredentials}

// Description is the vendor_a_mail provider's description.
var Description = providers.Description{
	Name:             providers.VendorAMail,
	ProtocolVersion:  providers.ProtocolVersion,
	DisplayName:      "Vendor A Mail (Gmail API)",
	OperationClasses: providers.OperationClassesFor(caps),
	Capabilities:     caps,
	ObjectKinds:      []providers.Kind{providers.KindMessage},
	MarkerKinds:      []providers.MarkerKind{providers.MarkerHistoryID},
}

// Scopes are the OAuth scopes vendor_a_mail needs: gmail.modify reads
// messages and history, trashes and untrashes them, imports messages and
// creates labels (docs/providers.md).
var Scopes = []string{gm.GmailModifyScope}

// DefaultEndpoint is the Gmail API's root.
const DefaultEndpoint = "https://gmail.googleapis.com/"

// QuotaPerMinute is Gmail's published per-user rate limit in quota units
// (developers.google.com/gmail/api/reference/quota): the default pacing.
const QuotaPerMinute = 15000

// MaxBatch is the most calls Gmail takes in one batch request; Google
// advises against more than DefaultBatch.
const (
	MaxBatch     = 100
	DefaultBatch = 50
)

// maxPage is the most messages.list returns a page.
const maxPage = 500

// Provider is a vendor_a_mail instance.
type Provider struct {
	svc    *gm.Service
	client *google.Client
	batchN int

	mu     sync.Mutex
	labels map[string]string // user label id -> name

	writing keylock.Locks // a Write's look-up and import, by Message-ID
}

// New opens a vendor_a_mail provider from its configuration.
func New(ctx context.Context, cfg providers.Config) (providers.Provider, error) {
	c, err := google.NewClient(cfg, DefaultEndpoint, QuotaPerMinute, Cost)
	if err != nil {
		return nil, fmt.Errorf("vendor_a_mail: %w", err)
	}
	n := DefaultBatch
	if v := cfg["batch_size"]; v != "" {
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > MaxBatch {
			return nil, fmt.Errorf("vendor_a_mail: config: batch_size must be 1 to %d: %w", MaxBatch, providers.ErrInvalidArgument)
		}
	}
	svc, err := gm.NewService(ctx, option.WithHTTPClient(c.HTTP), option.WithEndpoint(c.Endpoint))
	if err != nil {
		return nil, fmt.Errorf("vendor_a_mail: %w", err)
	}
	return &Provider{svc: svc, client: c, batchN: n}, nil
}

// Cost is a Gmail call's cost in quota units (Gmail API "Usage limits").
func Cost(r *http.Request) int {
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/messages/import"):
		return 25
	case r.Method == http.MethodPost && (strings.HasSuffix(p, "/labels") || strings.HasSuffix(p, "/modify")):
		return 5
	case strings.HasSuffix(p, "/profile"), strings.HasSuffix(p, "/labels"):
		return 1
	case strings.HasSuffix(p, "/history"):
		return 2
	case strings.HasSuffix(p, "/batchModify"), strings.HasSuffix(p, "/batchDelete"):
		return 50
	}
	return 5
}

// Describe returns Description.
func (p *Provider) Describe(context.Context) (providers.Description, error) { return Description, nil }

func user(ref string) string {
	if ref == "" || ref == "default" {
		return "me"
	}
	return ref
}

func fail(op, id string, err error) error { return google.Err(providers.VendorAMail, op, id, err) }

// token is a listing's or a delta's page token: the marker the listing
// carries (a delta's start) and Gmail's own page token.
type token struct {
	History uint64 `json:"h"`
	Page    string `json:"p"`
}

// Page token kinds (providers/pagetoken).
const (
	listKind    = "gmail.list"
	changesKind = "gmail.changes"
)

func encodeToken(kind string, t token) (string, error) {
	return pagetoken.EncodeState(kind, t)
}

// decodeToken reads a page token of kind, or one of the format before
// providers/pagetoken (a listing paused across an upgrade hands one back;
// it served listings and deltas alike).
func decodeToken(kind, s string) (token, error) {
	var t token
	err := pagetoken.DecodeState(kind, s, &t)
	if err != nil {
		t, err = decodeLegacyToken(s)
	}
	if err != nil || t.History == 0 || t.Page == "" {
		return token{}, fmt.Errorf("page token not issued by vendor_a_mail: %w", providers.ErrInvalidArgument)
	}
	return t, nil
}

// decodeLegacyToken reads a token of the hand-made format: base64url of
// {"v":1,"h":HISTORY,"p":PAGE}.
func decodeLegacyToken(s string) (token, error) {
	var t struct {
		V int `json:"v"`
		token
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &t)
	}
	if err == nil && t.V != 1 {
		err = errors.New("not a version 1 token")
	}
	return t.token, err
}

// List returns a page of the mailbox's messages, newest first, trashed
// ones left out.
func (p *Provider) List(ctx context.Context, req providers.ListRequest) (providers.Page, error) {
	uid := user(req.SourceRef)
	var t token
	if req.PageToken != "" {
		var err error
		if t, err = decodeToken(listKind, req.PageToken); err != nil {
			return providers.Page{}, err
		}
	} else {
		prof, err := p.svc.Users.GetProfile(uid).Context(ctx).Do()
		if err != nil {
			return providers.Page{}, fail("list", "", err)
		}
		t.History = prof.HistoryId
	}
	call := p.svc.Users.Messages.List(uid).IncludeSpamTrash(true).MaxResults(int64(min(providers.ClampPageSize(req.PageSize), maxPage))).Context(ctx)
	if t.Page != "" {
		call = call.PageToken(t.Page)
	}
	res, err := call.Do()
	if err != nil {
		return providers.Page{}, fail("list", "", err)
	}
	ids := make([]string, len(res.Messages))
	for i, m := range res.Messages {
		ids[i] = m.Id
	}
	got, err := p.metadata(ctx, uid, ids)
	if err != nil {
		return providers.Page{}, fail("list", "", err)
	}
	labels, err := p.labelNames(ctx, uid)
	if err != nil {
		return providers.Page{}, fail("list", "", err)
	}
	var page providers.Page
	for i, m := range got {
		switch {
		case m.err != nil && errors.Is(m.err, providers.ErrNotFound):
			continue // deleted since the list call
		case m.err != nil:
			return providers.Page{}, fail("list", ids[i], m.err)
		case slices.Contains(m.msg.LabelIds, "TRASH"):
			continue
		}
		page.Objects = append(page.Objects, listed(m.msg, labels))
	}
	if res.NextPageToken != "" {
		t.Page = res.NextPageToken
		if page.NextPageToken, err = encodeToken(listKind, t); err != nil {
			return providers.Page{}, fail("list", "", err)
		}
	} else {
		page.Marker = marker(t.History)
	}
	return page, nil
}

func marker(h uint64) providers.Marker {
	return providers.Marker{Kind: providers.MarkerHistoryID, Value: strconv.FormatUint(h, 10)}
}

// labelNames returns the user labels' names by id, read once.
func (p *Provider) labelNames(ctx context.Context, uid string) (map[string]string, error) {
	p.mu.Lock()
	l := p.labels
	p.mu.Unlock()
	if l != nil {
		return l, nil
	}
	res, err := p.svc.Users.Labels.List(uid).Context(ctx).Do()
	if err != nil {
		return nil, err
	}
	l = make(map[string]string, len(res.Labels))
	for _, x := range res.Labels {
		if x.Type == "user" {
			l[x.Id] = x.Name
		}
	}
	p.mu.Lock()
	p.labels = l
	p.mu.Unlock()
	return l, nil
}

// containers names a message's labels: system labels by id, the user's
// by name.
func containers(ids []string, names map[string]string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if n, ok := names[id]; ok {
			out = append(out, n)
		} else {
			out = append(out, id)
		}
	}
	return out
}

// base is what every object of a message carries, from Gmail's fields.
func base(m *gm.Message, names map[string]string) providers.Object {
	at := time.UnixMilli(m.InternalDate).UTC()
	o := providers.Object{
		ID: m.Id, Version: strconv.FormatUint(m.HistoryId, 10), Kind: providers.KindMessage,
		SizeBytes: m.SizeEstimate, MIMEType: "message/rfc822", Containers: containers(m.LabelIds, names),
		CreatedAt: at, ModifiedAt: at, Starred: slices.Contains(m.LabelIds, "STARRED"),
		Metadata: map[string]string{"gmail.thread_id": m.ThreadId, "gmail.label_ids": strings.Join(m.LabelIds, ",")},
	}
	if slices.Contains(m.LabelIds, "SENT") {
		o.Metadata[mail.FactFromAddrSelf] = "true"
	}
	return o
}

// withHeaders adds what a message's header block says.
func withHeaders(o *providers.Object, m *gm.Message, block []byte) {
	h, facts := providers.ReadMailHeader(block)
	if m.ThreadId != "" {
		h.ThreadID = m.ThreadId
	}
	o.Message = h
	o.Name = h.Subject
	o.Metadata = providers.WithFacts(o.Metadata, facts)
}

// listed is a listed message: Gmail's fields, its headers and snippet.
func listed(m *gm.Message, names map[string]string) providers.Object {
	o := base(m, names)
	var block bytes.Buffer
	if m.Payload != nil {
		for _, h := range m.Payload.Headers {
			fmt.Fprintf(&block, "%s: %s\r\n", h.Name, h.Value)
		}
	}
	block.WriteString("\r\n")
	withHeaders(&o, m, block.Bytes())
	o.Message.Snippet = html.UnescapeString(m.Snippet)
	return o
}

// fetched is a fetched message: Gmail's fields and what the raw message
// says; its size and SHA-256 are the raw bytes'.
func fetched(m *gm.Message, raw []byte, names map[string]string) providers.Object {
	o := base(m, names)
	o.SizeBytes = int64(len(raw))
	sum := sha256.Sum256(raw)
	o.SHA256 = hex.EncodeToString(sum[:])
	withHeaders(&o, m, raw)
	return o
}

// decodeRaw decodes Gmail's raw field (base64url, padded or not).
func decodeRaw(s string) ([]byte, error) {
	b, err := base64.URLEncoding.DecodeString(s)
	if err != nil {
		b, err = base64.RawURLEncoding.DecodeString(s)
	}
	if err != nil {
		return nil, fmt.Errorf("raw message: %w", providers.ErrInvalidData)
	}
	return b, nil
}

func checkVersion(id, expected string, m *gm.Message) error {
	if v := strconv.FormatUint(m.HistoryId, 10); expected != "" && v != expected {
		return &providers.VersionMismatchError{ObjectID: id, Expected: expected, Actual: v}
	}
	return nil
}

// Fetch returns a message in RFC 5322 form. Gmail sends it base64 inside
// JSON, so it is held in memory whole (Gmail's messages are at most about
// 50 MB).
func (p *Provider) Fetch(ctx context.Context, req providers.FetchRequest) (*providers.Content, error) {
	uid := user(req.SourceRef)
	if req.ExpectedVersion != "" || req.MaxBytes > 0 {
		// Check the version and size before the content crosses.
		m, err := p.svc.Users.Messages.Get(uid, req.ObjectID).Format("minimal").Context(ctx).Do()
		if err != nil {
			return nil, fail("fetch", req.ObjectID, err)
		}
		if err := checkVersion(req.ObjectID, req.ExpectedVersion, m); err != nil {
			return nil, err
		}
		if req.MaxBytes > 0 && m.SizeEstimate > req.MaxBytes {
			return nil, fail("fetch", req.ObjectID, fmt.Errorf("%d bytes: %w", m.SizeEstimate, providers.ErrTooLarge))
		}
	}
	m, err := p.svc.Users.Messages.Get(uid, req.ObjectID).Format("raw").Context(ctx).Do()
	if err != nil {
		return nil, fail("fetch", req.ObjectID, err)
	}
	if err := checkVersion(req.ObjectID, req.ExpectedVersion, m); err != nil {
		return nil, err
	}
	raw, err := decodeRaw(m.Raw)
	if err != nil {
		return nil, fail("fetch", req.ObjectID, err)
	}
	names, err := p.labelNames(ctx, uid)
	if err != nil {
		return nil, fail("fetch", req.ObjectID, err)
	}
	return &providers.Content{Object: fetched(m, raw, names), Body: io.NopCloser(bytes.NewReader(raw))}, nil
}

// Trash moves a message to Gmail's trash (label TRASH), from which
// Untrash takes it back; Gmail deletes it for good after 30 days.
func (p *Provider) Trash(ctx context.Context, req providers.ActionRequest) (providers.ActionResult, error) {
	uid := user(req.SourceRef)
	if req.ExpectedVersion != "" {
		m, err := p.svc.Users.Messages.Get(uid, req.ObjectID).Format("minimal").Context(ctx).Do()
		if err != nil {
			return providers.ActionResult{}, fail("trash", req.ObjectID, err)
		}
		if err := checkVersion(req.ObjectID, req.ExpectedVersion, m); err != nil {
			return providers.ActionResult{}, err
		}
	}
	if _, err := p.svc.Users.Messages.Trash(uid, req.ObjectID).Context(ctx).Do(); err != nil {
		return providers.ActionResult{}, fail("trash", req.ObjectID, err)
	}
	return providers.ActionResult{ResultID: req.ObjectID, Restorable: true}, nil
}

// Untrash takes a message out of the trash; one that is not there is
// returned as it is.
func (p *Provider) Untrash(ctx context.Context, req providers.UntrashRequest) (providers.Object, error) {
	uid := user(req.SourceRef)
	id := req.ObjectID
	if req.ResultID != "" {
		id = req.ResultID
	}
	if _, err := p.svc.Users.Messages.Untrash(uid, id).Context(ctx).Do(); err != nil {
		return providers.Object{}, fail("untrash", id, err)
	}
	got, err := p.metadata(ctx, uid, []string{id})
	if err == nil {
		err = got[0].err
	}
	if err != nil {
		return providers.Object{}, fail("untrash", id, err)
	}
	names, err := p.labelNames(ctx, uid)
	if err != nil {
		return providers.Object{}, fail("untrash", id, err)
	}
	return listed(got[0].msg, names), nil
}

// Changes lists the messages that changed since a history_id marker, each
// as it is now (trashed or deleted ones as deletions).
func (p *Provider) Changes(ctx context.Context, req providers.ChangesRequest) (providers.ChangePage, error) {
	uid := user(req.SourceRef)
	if req.Since.Kind != providers.MarkerHistoryID {
		return providers.ChangePage{}, fmt.Errorf("vendor_a_mail: marker kind %q: %w", req.Since.Kind, providers.ErrInvalidArgument)
	}
	since, err := strconv.ParseUint(req.Since.Value, 10, 64)
	if err != nil {
		return providers.ChangePage{}, fmt.Errorf("vendor_a_mail: marker %q is not a history id: %w", req.Since.Value, providers.ErrInvalidArgument)
	}
	call := p.svc.Users.History.List(uid).StartHistoryId(since).MaxResults(int64(min(providers.ClampPageSize(req.PageSize), maxPage))).Context(ctx)
	if req.PageToken != "" {
		t, err := decodeToken(changesKind, req.PageToken)
		if err != nil {
			return providers.ChangePage{}, err
		}
		call = call.PageToken(t.Page)
	}
	res, err := call.Do()
	if err != nil {
		err = fail("changes", "", err)
		if errors.Is(err, providers.ErrNotFound) {
			return providers.ChangePage{}, fmt.Errorf("vendor_a_mail: history %d is no longer kept: %w", since, providers.ErrMarkerExpired)
		}
		return providers.ChangePage{}, err
	}
	var ids []string
	for _, h := range res.History {
		for _, m := range h.Messages {
			if !slices.Contains(ids, m.Id) {
				ids = append(ids, m.Id)
			}
		}
	}
	var page providers.ChangePage
	if len(ids) > 0 {
		got, err := p.metadata(ctx, uid, ids)
		if err != nil {
			return providers.ChangePage{}, fail("changes", "", err)
		}
		names, err := p.labelNames(ctx, uid)
		if err != nil {
			return providers.ChangePage{}, fail("changes", "", err)
		}
		for i, g := range got {
			switch {
			case g.err != nil && errors.Is(g.err, providers.ErrNotFound), g.err == nil && slices.Contains(g.msg.LabelIds, "TRASH"):
				page.Changes = append(page.Changes, providers.Change{Type: providers.ChangeDelete, ObjectID: ids[i]})
			case g.err != nil:
				return providers.ChangePage{}, fail("changes", ids[i], g.err)
			default:
				o := listed(g.msg, names)
				page.Changes = append(page.Changes, providers.Change{Type: providers.ChangeUpsert, ObjectID: o.ID, Object: &o})
			}
		}
	}
	if res.NextPageToken != "" {
		if page.NextPageToken, err = encodeToken(changesKind, token{History: since, Page: res.NextPageToken}); err != nil {
			return providers.ChangePage{}, fail("changes", "", err)
		}
	} else {
		page.Marker = marker(res.HistoryId)
	}
	return page, nil
}

// Close releases nothing: the client holds no resources beyond idle
// connections.
func (p *Provider) Close() error {
	p.client.HTTP.CloseIdleConnections()
	return nil
}
