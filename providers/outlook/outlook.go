// Package outlook is the vendor_b_mail provider: an Outlook / Exchange
// Online mailbox over Microsoft Graph v1.0 (providers/graph).
//
// Config keys: those of providers/graph (endpoint, the OAuth token and
// client, pacing). The source ref names the account and is not sent: the
// provider acts on the signed-in user's mailbox (/me). Every request asks
// for immutable ids (Prefer: IdType="ImmutableId"), so a message keeps its
// id when it moves between folders (and to Deleted Items and back).
//
//   - Listing walks every mail folder (child folders included) except
//     Deleted Items, which is the trash, and runs each folder's message
//     delta query from scratch. A message's version is its changeKey; its
//     size is PR_MESSAGE_SIZE (the extended property "Integer 0x0E08");
//     its headers and the mail.* facts come from internetMessageHeaders
//     read by svc's mail reader (providers.ReadMailHeader), its snippet
//     from bodyPreview, its thread from conversationId, its container from
//     the folder's path ("Inbox/Lists", "Junk Email").
//   - The revision marker (kind delta_token) is every folder's deltaLink,
//     compressed. Changes runs each folder's delta from it, new folders
//     from scratch; a message that left a folder is a delete only when it
//     is not in another listed folder (a move is an upsert there). A folder
//     that vanished, or a token Graph no longer knows (410), is
//     ErrMarkerExpired. A mailbox whose delta state does not fit a marker
//     (4,000 bytes compressed: about 15 folders with Graph's 120-character
//     ids and tokens) gets a marker of kind none, which the layer treats as
//     unmoved; each message's changeKey still guards fetch and trash.
//   - Fetch checks the changeKey, then streams the MIME content
//     (/messages/{id}/$value); the object's size is the content's length.
//   - Trash moves the message to Deleted Items after checking its
//     changeKey; the result id is the folder it came from, and Untrash
//     moves it back there (idempotent). Exchange keeps Deleted Items until
//     the user or a retention policy empties it.
//
// Pacing: Outlook's documented limits per app and mailbox are 10,000
// requests in 10 minutes and 4 concurrent requests; the default pace is
// 16.6 requests a second, burst 4, at most 4 in flight.
package outlook

import (
	"bufio"
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"

	"svc.dev/svc/mail"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/graph"
	"svc.dev/svc/providers/pagetoken"
)

var caps = []providers.Capability{providers.CapTrash, providers.CapUntrash}

// Description is the vendor_b_mail provider's description.
var Description = providers.Description{
	Name:             providers.VendorBMail,
	ProtocolVersion:  providers.ProtocolVersion,
	DisplayName:      "Outlook mail (Microsoft Graph)",
	OperationClasses: providers.OperationClassesFor(caps),
	Capabilities:     caps,
	ObjectKinds:      []providers.Kind{providers.KindMessage},
	MarkerKinds:      []providers.MarkerKind{providers.MarkerDeltaToken, providers.MarkerNone},
}

// DefaultPacing is Outlook's documented quota per app and mailbox: 10,000
// requests per 10 minutes, 4 concurrent requests.
var DefaultPacing = graph.Pacing{Rate: rate.Limit(10000.0 / 600), Burst: 4, MaxConcurrent: 4}

// sizeProperty is PR_MESSAGE_SIZE as Graph names an extended property.
const sizeProperty = "Integer 0x0E08"

var (
	selectList = "id,changeKey,subject,from,sender,toRecipients,ccRecipients,replyTo,receivedDateTime,sentDateTime," +
		"createdDateTime,lastModifiedDateTime,conversationId,internetMessageId,bodyPreview,parentFolderId,flag,isRead," +
		"hasAttachments,internetMessageHeaders"
	query = "$select=" + selectList + "&$expand=" + strings.ReplaceAll(url.QueryEscape("singleValueExtendedProperties($filter=id eq '"+sizeProperty+"')"), "+", "%20")
)

// Provider is a vendor_b_mail instance.
type Provider struct {
	c *graph.Client

	mu      sync.Mutex
	folders map[string]string // folder id -> path ("Inbox/Lists"), Deleted Items left out
	trash   string            // Deleted Items' id
}

var (
	_ providers.Provider  = (*Provider)(nil)
	_ providers.Trasher   = (*Provider)(nil)
	_ providers.Untrasher = (*Provider)(nil)
)

// New opens a vendor_b_mail provider. It is a providers.Factory; it does
// not contact Graph.
func New(_ context.Context, cfg providers.Config) (providers.Provider, error) {
	return Open(cfg, nil)
}

// Open is New with the transport the client sends through (nil: the
// default), for tests.
func Open(cfg providers.Config, base http.RoundTripper) (*Provider, error) {
	for k := range cfg {
		if !slices.Contains(graph.ConfigKeys, k) {
			return nil, fmt.Errorf("outlook: unknown config key %q: %w", k, providers.ErrInvalidArgument)
		}
	}
	c, err := graph.New(cfg, DefaultPacing, base)
	if err != nil {
		return nil, fmt.Errorf("outlook: %w", err)
	}
	c.Header.Set("Prefer", `IdType="ImmutableId"`)
	return &Provider{c: c}, nil
}

// Describe implements providers.Provider.
func (p *Provider) Describe(context.Context) (providers.Description, error) { return Description, nil }

type mailFolder struct {
	ID               string `json:"id"`
	DisplayName      string `json:"displayName"`
	ChildFolderCount int    `json:"childFolderCount"`
}

// loadFolders reads the folder tree (refresh, or the first time).
func (p *Provider) loadFolders(ctx context.Context, refresh bool) (map[string]string, string, error) {
	p.mu.Lock()
	if p.folders != nil && !refresh {
		defer p.mu.Unlock()
		return p.folders, p.trash, nil
	}
	p.mu.Unlock()
	var trash mailFolder
	if _, err := p.c.Do(ctx, http.MethodGet, "/me/mailFolders/deleteditems?$select=id", nil, nil, &trash); err != nil {
		return nil, "", err
	}
	out := map[string]string{}
	type todo struct{ link, prefix string }
	queue := []todo{{"/me/mailFolders?$top=100", ""}}
	for len(queue) > 0 && len(out) < 10000 {
		t := queue[0]
		queue = queue[1:]
		var page graph.Page[mailFolder]
		if _, err := p.c.Do(ctx, http.MethodGet, t.link, nil, nil, &page); err != nil {
			return nil, "", err
		}
		for _, f := range page.Value {
			if f.ID == trash.ID {
				continue
			}
			path := t.prefix + f.DisplayName
			out[f.ID] = path
			if f.ChildFolderCount > 0 {
				queue = append(queue, todo{"/me/mailFolders/" + url.PathEscape(f.ID) + "/childFolders?$top=100", path + "/"})
			}
		}
		if page.NextLink != "" {
			rel, ok := p.c.Relative(page.NextLink)
			if !ok {
				return nil, "", fmt.Errorf("nextLink outside the endpoint: %w", providers.ErrTransient)
			}
			queue = append(queue, todo{rel, t.prefix})
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.folders, p.trash = out, trash.ID
	return out, trash.ID, nil
}

func sortedIDs(folders map[string]string) []string {
	ids := make([]string, 0, len(folders))
	for id := range folders {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

type recipient struct {
	EmailAddress struct {
		Name    string `json:"name"`
		Address string `json:"address"`
	} `json:"emailAddress"`
}

func (r recipient) String() string {
	a := r.EmailAddress
	if a.Name == "" {
		return "<" + a.Address + ">"
	}
	return strconv.Quote(a.Name) + " <" + a.Address + ">"
}

// message is a message as Graph sends it.
type message struct {
	ID                string      `json:"id"`
	ChangeKey         string      `json:"changeKey"`
	Subject           string      `json:"subject"`
	BodyPreview       string      `json:"bodyPreview"`
	ParentFolderID    string      `json:"parentFolderId"`
	ConversationID    string      `json:"conversationId"`
	InternetMessageID string      `json:"internetMessageId"`
	Received          string      `json:"receivedDateTime"`
	Sent              string      `json:"sentDateTime"`
	Created           string      `json:"createdDateTime"`
	Modified          string      `json:"lastModifiedDateTime"`
	From              *recipient  `json:"from"`
	To                []recipient `json:"toRecipients"`
	Cc                []recipient `json:"ccRecipients"`
	ReplyTo           []recipient `json:"replyTo"`
	Flag              *struct {
		FlagStatus string `json:"flagStatus"`
	} `json:"flag"`
	Headers []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"internetMessageHeaders"`
	Props []struct {
		ID    string `json:"id"`
		Value string `json:"value"`
	} `json:"singleValueExtendedProperties"`
	Removed *struct {
		Reason string `json:"reason"`
	} `json:"@removed"`
}

// headerBlock is the message's header block for svc's mail reader: the
// internet headers Graph reports, or, without them, the headers its
// properties stand for.
func (m *message) headerBlock() []byte {
	var b bytes.Buffer
	hasCT := false
	clean := func(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }
	for _, h := range m.Headers {
		if strings.EqualFold(h.Name, "Content-Type") {
			hasCT = true
		}
		fmt.Fprintf(&b, "%s: %s\r\n", clean(h.Name), clean(h.Value))
	}
	if len(m.Headers) == 0 {
		join := func(rs []recipient) string {
			var s []string
			for _, r := range rs {
				s = append(s, r.String())
			}
			return strings.Join(s, ", ")
		}
		if m.From != nil {
			fmt.Fprintf(&b, "From: %s\r\n", clean(m.From.String()))
		}
		for _, h := range []struct{ k, v string }{{"To", join(m.To)}, {"Cc", join(m.Cc)}, {"Reply-To", join(m.ReplyTo)}, {"Subject", m.Subject}, {"Message-ID", m.InternetMessageID}} {
			if h.v != "" {
				fmt.Fprintf(&b, "%s: %s\r\n", h.k, clean(h.v))
			}
		}
		if t, err := time.Parse(time.RFC3339, m.Sent); err == nil {
			fmt.Fprintf(&b, "Date: %s\r\n", t.Format(time.RFC1123Z))
		}
	}
	if !hasCT {
		// Graph's strings are UTF-8: say so, for any raw 8-bit bytes.
		b.WriteString("Content-Type: text/plain; charset=utf-8\r\n")
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

func (m *message) size() int64 {
	for _, p := range m.Props {
		if strings.EqualFold(p.ID, sizeProperty) {
			if n, err := strconv.ParseInt(p.Value, 10, 64); err == nil && n >= 0 {
				return n
			}
		}
	}
	return 0
}

func (p *Provider) object(m *message, folders map[string]string, trash string) providers.Object {
	h, facts := providers.ReadMailHeader(m.headerBlock())
	if m.Subject != "" || h.Subject == "" {
		h.Subject = m.Subject
	}
	if h.From == "" && m.From != nil {
		h.From = m.From.EmailAddress.Address
	}
	if m.ConversationID != "" {
		h.ThreadID = m.ConversationID
	}
	if h.Date.IsZero() {
		h.Date, _ = time.Parse(time.RFC3339, m.Sent)
	}
	// Within the plugin protocol's bounds (a longer field fails the page).
	h.Snippet = clip(m.BodyPreview, 300)
	h.Subject = clip(h.Subject, 4096)
	h.From = clip(h.From, 2048)
	folder := folders[m.ParentFolderID]
	if m.ParentFolderID == trash {
		folder = "Deleted Items"
	}
	o := providers.Object{
		ID:        m.ID,
		ParentID:  m.ParentFolderID,
		Version:   m.ChangeKey,
		Kind:      providers.KindMessage,
		Name:      h.Subject,
		Path:      folder,
		SizeBytes: m.size(),
		MIMEType:  "message/rfc822",
		Starred:   m.Flag != nil && m.Flag.FlagStatus == "flagged",
		Message:   h,
		Metadata:  providers.WithFacts(nil, facts),
	}
	if folder != "" {
		o.Containers = []string{folder}
	}
	o.CreatedAt, _ = time.Parse(time.RFC3339, m.Received)
	o.ModifiedAt, _ = time.Parse(time.RFC3339, m.Modified)
	if strings.EqualFold(folder, "Sent Items") {
		o.Metadata[mail.FactFromAddrSelf] = "true"
	}
	return o
}

// marker encoding: folder id -> delta path, JSON, deflated, base64url, and
// a check of 6 bytes of the JSON's SHA-256 so a damaged marker is refused.
const (
	markerPrefix   = "o1."
	maxMarkerBytes = 4000
)

// A folder's deltaLink is kept as its $deltatoken alone when it is svc's
// path for the folder with that one parameter (the folder id is the map's
// key already); otherwise whole.
const tokenOnly = "t:"

func encodeDeltas(d map[string]string) (string, error) {
	short := make(map[string]string, len(d))
	for id, link := range d {
		short[id] = link
		if tok, ok := strings.CutPrefix(link, deltaPath(id)+"?$deltatoken="); ok && !strings.ContainsAny(tok, "&") {
			short[id] = tokenOnly + tok
		}
	}
	raw, err := json.Marshal(short)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	w, _ := flate.NewWriter(&b, flate.BestCompression)
	_, _ = w.Write(raw)
	_ = w.Close()
	sum := sha256.Sum256(raw)
	return markerPrefix + base64.RawURLEncoding.EncodeToString(b.Bytes()) + "." + hex.EncodeToString(sum[:6]), nil
}

func decodeDeltas(v string) (map[string]string, error) {
	bad := fmt.Errorf("outlook: not a vendor_b_mail marker: %w", providers.ErrMarkerExpired)
	s, ok := strings.CutPrefix(v, markerPrefix)
	s, check, ok2 := strings.Cut(s, ".")
	if !ok || !ok2 {
		return nil, bad
	}
	z, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad
	}
	raw, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(z)), 1<<20))
	if err != nil {
		return nil, bad
	}
	sum := sha256.Sum256(raw)
	var d map[string]string
	if check != hex.EncodeToString(sum[:6]) || json.Unmarshal(raw, &d) != nil || len(d) == 0 {
		return nil, bad
	}
	for id, link := range d {
		if tok, ok := strings.CutPrefix(link, tokenOnly); ok {
			d[id] = deltaPath(id) + "?$deltatoken=" + tok
		} else if !isMessageDelta(link) {
			return nil, bad
		}
	}
	return d, nil
}

// isMessageDelta reports whether a path is a folder's message delta link,
// in the form svc builds or in Graph's own (mailFolders('id')/...).
func isMessageDelta(link string) bool {
	return strings.HasPrefix(strings.ToLower(link), "/me/mailfolders") && strings.Contains(link, "/messages/delta")
}

func deltaPath(folder string) string {
	return "/me/mailFolders/" + url.PathEscape(folder) + "/messages/delta"
}

func (p *Provider) marker(deltas map[string]string) (providers.Marker, error) {
	v, err := encodeDeltas(deltas)
	if err != nil {
		return providers.Marker{}, err
	}
	if len(v) > maxMarkerBytes {
		return providers.Marker{Kind: providers.MarkerNone}, nil
	}
	return providers.Marker{Kind: providers.MarkerDeltaToken, Value: v}, nil
}

// walkState is the position of a listing or a changes listing across the
// folders: the folders still to read (the current one first), the vendor
// cursor in the current one (Link empty: start it), the deltaLinks of the
// folders done, and (changes) whether any change was found.
type walkState struct {
	Folders []string          `json:"f"`
	Cur     graph.Cursor      `json:"c"`
	Deltas  map[string]string `json:"d"`
	Any     bool              `json:"a,omitempty"`
}

const (
	listKind    = "outlook.list"
	changesKind = "outlook.changes"
	maxSteps    = 50 // vendor pages one call reads past while they give nothing
)

func (p *Provider) deltaHeader(n int) http.Header {
	return http.Header{"Prefer": {`IdType="ImmutableId", odata.maxpagesize=` + strconv.Itoa(n)}}
}

// List implements providers.Provider.
func (p *Provider) List(ctx context.Context, req providers.ListRequest) (providers.Page, error) {
	n := providers.ClampPageSize(req.PageSize)
	var st walkState
	if req.PageToken != "" {
		if err := pagetoken.DecodeState(listKind, req.PageToken, &st); err != nil || len(st.Folders) == 0 {
			return providers.Page{}, fmt.Errorf("outlook: list: bad page token: %w", providers.ErrInvalidArgument)
		}
	}
	folders, trash, err := p.loadFolders(ctx, req.PageToken == "")
	if err != nil {
		return providers.Page{}, p.err("list", "", err)
	}
	if req.PageToken == "" {
		st = walkState{Folders: sortedIDs(folders), Deltas: map[string]string{}}
	}
	var page providers.Page
	for step := 0; len(st.Folders) > 0; step++ {
		f := st.Folders[0]
		if st.Cur.Link == "" {
			st.Cur = graph.Cursor{Link: deltaPath(f) + "?" + query}
		} else if !isMessageDelta(st.Cur.Link) {
			return providers.Page{}, fmt.Errorf("outlook: list: bad page token: %w", providers.ErrInvalidArgument)
		}
		msgs, next, done, delta, err := graph.Step[message](ctx, p.c, p.deltaHeader(n), st.Cur, n-len(page.Objects))
		if errors.Is(err, providers.ErrNotFound) && st.Cur.Skip == 0 {
			// The folder went away since the listing started: its messages
			// were deleted or moved (and then listed where they went).
			st.Folders, st.Cur = st.Folders[1:], graph.Cursor{}
			continue
		}
		if err != nil {
			return providers.Page{}, p.err("list", "", err)
		}
		for i := range msgs {
			if msgs[i].Removed == nil {
				page.Objects = append(page.Objects, p.object(&msgs[i], folders, trash))
			}
		}
		if done {
			st.Deltas[f] = delta
			st.Folders, st.Cur = st.Folders[1:], graph.Cursor{}
		} else {
			st.Cur = next
		}
		if len(page.Objects) >= n || (step >= maxSteps && len(st.Folders) > 0) {
			break
		}
	}
	if len(st.Folders) == 0 {
		page.Marker, err = p.marker(st.Deltas)
		return page, err
	}
	page.NextPageToken, err = pagetoken.EncodeState(listKind, st)
	return page, err
}

// Changes implements providers.Provider.
func (p *Provider) Changes(ctx context.Context, req providers.ChangesRequest) (providers.ChangePage, error) {
	n := providers.ClampPageSize(req.PageSize)
	if req.Since.Kind != providers.MarkerDeltaToken {
		return providers.ChangePage{}, fmt.Errorf("outlook: changes since a %s marker: %w", req.Since.Kind, providers.ErrMarkerExpired)
	}
	since, err := decodeDeltas(req.Since.Value)
	if err != nil {
		return providers.ChangePage{}, err
	}
	var st walkState
	if req.PageToken != "" {
		if err := pagetoken.DecodeState(changesKind, req.PageToken, &st); err != nil || len(st.Folders) == 0 {
			return providers.ChangePage{}, fmt.Errorf("outlook: changes: bad page token: %w", providers.ErrInvalidArgument)
		}
	}
	folders, trash, err := p.loadFolders(ctx, req.PageToken == "")
	if err != nil {
		return providers.ChangePage{}, p.err("changes", "", err)
	}
	if req.PageToken == "" {
		all := map[string]string{}
		for id := range since {
			all[id] = ""
		}
		for id := range folders {
			all[id] = ""
		}
		st = walkState{Folders: sortedIDs(all), Deltas: map[string]string{}}
	}
	var page providers.ChangePage
	for step := 0; len(st.Folders) > 0; step++ {
		f := st.Folders[0]
		if st.Cur.Link == "" {
			st.Cur.Link = since[f]
			if st.Cur.Link == "" {
				st.Cur.Link = deltaPath(f) + "?" + query // a folder new since the marker
			}
		}
		if !isMessageDelta(st.Cur.Link) {
			return providers.ChangePage{}, fmt.Errorf("outlook: changes: bad page token: %w", providers.ErrInvalidArgument)
		}
		msgs, next, done, delta, err := graph.Step[message](ctx, p.c, p.deltaHeader(n), st.Cur, n-len(page.Changes))
		if errors.Is(err, providers.ErrNotFound) {
			return providers.ChangePage{}, p.err("changes", "", fmt.Errorf("folder %s is gone: %w", f, providers.ErrMarkerExpired))
		}
		if err != nil {
			return providers.ChangePage{}, p.err("changes", "", err)
		}
		for i := range msgs {
			m := &msgs[i]
			if m.Removed == nil {
				o := p.object(m, folders, trash)
				page.Changes = append(page.Changes, providers.Change{Type: providers.ChangeUpsert, ObjectID: m.ID, Object: &o})
				continue
			}
			gone, err := p.gone(ctx, m.ID, folders)
			if err != nil {
				return providers.ChangePage{}, p.err("changes", m.ID, err)
			}
			if gone {
				page.Changes = append(page.Changes, providers.Change{Type: providers.ChangeDelete, ObjectID: m.ID})
			}
		}
		st.Any = st.Any || len(page.Changes) > 0
		if done {
			st.Deltas[f] = delta
			st.Folders, st.Cur = st.Folders[1:], graph.Cursor{}
		} else {
			st.Cur = next
		}
		if len(page.Changes) >= n || (len(page.Changes) > 0 && len(st.Folders) > 0) || step >= maxSteps {
			break
		}
	}
	if len(st.Folders) == 0 {
		if !st.Any {
			// Graph may issue a new token every round: a round without a change
			// keeps the marker it started from.
			page.Marker = req.Since
			return page, nil
		}
		page.Marker, err = p.marker(st.Deltas)
		return page, err
	}
	page.NextPageToken, err = pagetoken.EncodeState(changesKind, st)
	return page, err
}

// gone reports whether a message that left a folder is out of the listing
// (deleted, or in Deleted Items) rather than moved to another listed
// folder, whose delta reports it.
func (p *Provider) gone(ctx context.Context, id string, folders map[string]string) (bool, error) {
	var m message
	_, err := p.c.Do(ctx, http.MethodGet, "/me/messages/"+url.PathEscape(id)+"?$select=id,parentFolderId", nil, nil, &m)
	if errors.Is(err, providers.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	_, listed := folders[m.ParentFolderID]
	return !listed, nil
}

func (p *Provider) get(ctx context.Context, id string) (*message, error) {
	var m message
	if _, err := p.c.Do(ctx, http.MethodGet, "/me/messages/"+url.PathEscape(id)+"?"+query, nil, nil, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// Fetch implements providers.Provider.
func (p *Provider) Fetch(ctx context.Context, req providers.FetchRequest) (*providers.Content, error) {
	m, err := p.get(ctx, req.ObjectID)
	if err != nil {
		return nil, p.err("fetch", req.ObjectID, err)
	}
	if req.ExpectedVersion != "" && m.ChangeKey != req.ExpectedVersion {
		return nil, &providers.VersionMismatchError{ObjectID: req.ObjectID, Expected: req.ExpectedVersion, Actual: m.ChangeKey}
	}
	folders, trash, err := p.loadFolders(ctx, false)
	if err != nil {
		return nil, p.err("fetch", req.ObjectID, err)
	}
	o := p.object(m, folders, trash)
	o.Message.Snippet = "" // a fetch reports the header block only (docs/providers.md)
	if req.MaxBytes > 0 && o.SizeBytes > req.MaxBytes {
		return nil, p.err("fetch", req.ObjectID, fmt.Errorf("%d bytes: %w", o.SizeBytes, providers.ErrTooLarge))
	}
	resp, err := p.c.Open(ctx, "/me/messages/"+url.PathEscape(req.ObjectID)+"/$value", false)
	if err != nil {
		return nil, p.err("fetch", req.ObjectID, err)
	}
	body := io.ReadCloser(resp.Body)
	if resp.ContentLength >= 0 {
		o.SizeBytes = resp.ContentLength
	} else {
		// No length announced: read it whole (a message is at most 150 MB
		// at Exchange), within what the caller accepts.
		limit := int64(150 << 20)
		if req.MaxBytes > 0 {
			limit = req.MaxBytes
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
		resp.Body.Close()
		if err != nil {
			return nil, p.err("fetch", req.ObjectID, fmt.Errorf("%v: %w", err, providers.ErrTransient))
		}
		if int64(len(b)) > limit {
			return nil, p.err("fetch", req.ObjectID, providers.ErrTooLarge)
		}
		o.SizeBytes, body = int64(len(b)), io.NopCloser(bytes.NewReader(b))
	}
	return &providers.Content{Object: o, Body: &exact{r: bufio.NewReader(body), c: body, left: o.SizeBytes, id: o.ID}}, nil
}

// exact fails a body that ends before, or runs past, its announced size.
type exact struct {
	r    io.Reader
	c    io.Closer
	left int64
	id   string
}

func (e *exact) Read(b []byte) (int, error) {
	n, err := e.r.Read(b)
	e.left -= int64(n)
	switch {
	case e.left < 0:
		return n, fmt.Errorf("outlook: %s: longer than announced: %w", e.id, providers.ErrInvalidData)
	case err == io.EOF && e.left > 0:
		return n, fmt.Errorf("outlook: %s: %d bytes short: %w", e.id, e.left, providers.ErrTransient)
	}
	return n, err
}

func (e *exact) Close() error { return e.c.Close() }

func (p *Provider) move(ctx context.Context, id, dest string) (*message, error) {
	var m message
	_, err := p.c.Do(ctx, http.MethodPost, "/me/messages/"+url.PathEscape(id)+"/move", nil, map[string]string{"destinationId": dest}, &m)
	return &m, err
}

// Trash implements providers.Trasher: a move to Deleted Items, after the
// changeKey check (Graph has no conditional move: a change in between the
// check and the move is not seen).
func (p *Provider) Trash(ctx context.Context, req providers.ActionRequest) (providers.ActionResult, error) {
	m, err := p.get(ctx, req.ObjectID)
	if err != nil {
		return providers.ActionResult{}, p.err("trash", req.ObjectID, err)
	}
	if req.ExpectedVersion != "" && m.ChangeKey != req.ExpectedVersion {
		return providers.ActionResult{}, &providers.VersionMismatchError{ObjectID: req.ObjectID, Expected: req.ExpectedVersion, Actual: m.ChangeKey}
	}
	_, trash, err := p.loadFolders(ctx, false)
	if err != nil {
		return providers.ActionResult{}, p.err("trash", req.ObjectID, err)
	}
	if m.ParentFolderID != trash {
		if _, err := p.move(ctx, req.ObjectID, "deleteditems"); err != nil {
			return providers.ActionResult{}, p.err("trash", req.ObjectID, err)
		}
	}
	return providers.ActionResult{ResultID: m.ParentFolderID, Restorable: true}, nil
}

// Untrash implements providers.Untrasher: a move back to the folder the
// message was trashed from (the result id); a message already there is
// returned as it is.
func (p *Provider) Untrash(ctx context.Context, req providers.UntrashRequest) (providers.Object, error) {
	if req.ResultID == "" {
		return providers.Object{}, fmt.Errorf("outlook: untrash %s: no result id: %w", req.ObjectID, providers.ErrInvalidArgument)
	}
	m, err := p.get(ctx, req.ObjectID)
	if err != nil {
		return providers.Object{}, p.err("untrash", req.ObjectID, err)
	}
	if m.ParentFolderID != req.ResultID {
		if _, err := p.move(ctx, req.ObjectID, req.ResultID); err != nil {
			return providers.Object{}, p.err("untrash", req.ObjectID, err)
		}
		if m, err = p.get(ctx, req.ObjectID); err != nil {
			return providers.Object{}, p.err("untrash", req.ObjectID, err)
		}
	}
	folders, trash, err := p.loadFolders(ctx, false)
	if err != nil {
		return providers.Object{}, p.err("untrash", req.ObjectID, err)
	}
	return p.object(m, folders, trash), nil
}

func (p *Provider) err(op, id string, err error) error {
	return &providers.Error{Op: op, Provider: providers.VendorBMail, ObjectID: id, Err: err}
}

// clip cuts s to at most n bytes on a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
