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
//   - Write stores a message's MIME in a mail folder (the path, as the
//     listing writes containers; missing folders are created), as Graph
//     creates one from MIME: a draft, at most MaxMIMEBytes. A message
//     whose Message-ID the folder holds is not stored twice, and a lost
//     answer is looked up by it before the POST is sent again. A restore
//     to the original place, named by the message's id, moves it back out
//     of Deleted Items.
//   - Quota sums every mail folder's PR_MESSAGE_SIZE_EXTENDED (Deleted
//     Items as the trash); Graph v1.0 gives the mailbox's user no quota
//     limit, so LimitBytes is 0.
//
// Pacing: Outlook's documented limits per app and mailbox are 10,000
// requests in 10 minutes and 4 concurrent requests; the default pace is
// 16.6 requests a second, burst 4, at most 4 in flight.
package outlook

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"svc.dev/svc/mail"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/graph"
	"svc.dev/svc/providers/internal/keylock"
)

var caps = []providers.Capability{providers.CapTrash, providers.CapUntrash, providers.CapWrite, providers.CapQuota, providers.CapCredentials}

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
	inbox   string            // Inbox's id, once a write needed it

	writing keylock.Locks // a Write's look-up and create, by Message-ID
}

var (
	_ providers.Provider  = (*Provider)(nil)
	_ providers.Trasher   = (*Provider)(nil)
	_ providers.Untrasher = (*Provider)(nil)
	_ providers.Quotaer   = (*Provider)(nil)
	_ providers.Writer    = (*Provider)(nil)
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
