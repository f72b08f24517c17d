package plan

import (
	"context"
	"net/url"
	"strings"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

// Object is a discovered provider object, with what classification needs.
type Object struct {
	ID         string // provider object id
	Version    string // expected version; "" when the provider has none
	Kind       string // message, attachment, file, folder, photo, video, statement, other
	Name       string
	Path       string
	MIMEType   string
	SizeBytes  int64
	SHA256     string // lowercase hex, "" when unknown
	Containers []string
	CreatedAt  time.Time
	ModifiedAt time.Time
	Starred    bool
	Shared     bool

	// Mail headers, for messages.
	From string
	// To and Cc are the recipients' addresses. Only those of the owner's own mail are kept
	// while planning: they are the owner's correspondents.
	To, Cc              []string
	Subject             string
	ListID              string
	ListUnsubscribe     string
	ListUnsubscribePost bool
	ThreadID            string
	// Snippet is the start of the message's text.
	Snippet string
	// Facts are the header facts the provider read (keys mail.Fact*), from the object's
	// metadata.
	Facts map[string]string
}

// Marker is a source revision marker (the plan's sourceMarkers kind and value).
type Marker struct {
	Kind  string
	Value string
}

// Page is one page of a source's listing.
type Page struct {
	Objects []Object
	// Marker is the source's revision marker; the last page carries it.
	Marker Marker
	// Last is true on the last page.
	Last bool
}

// Objects is one source's listing, read page by page. It must not change provider state.
type Objects interface {
	Next(ctx context.Context) (Page, error)
}

// Source is one source to plan over.
type Source struct {
	ID       string
	Provider svcv1.Provider
	// Status is the source's status; a plan over a source that is not connected is denied.
	Status svcv1.SourceStatus
	// Policy is the source's policy (nil: all defaults). A request's Policy overrides it.
	Policy *svcv1.SourcePolicy
	// Quota is the source's storage use, when known.
	Quota *Quota
	// Addresses are the account's own mail addresses, when known: mail from them is the owner's,
	// and mail they sent makes its recipients correspondents (docs/plans.md).
	Addresses []string
	// CanTrash and CanWrite say whether the provider can trash objects and store content.
	CanTrash, CanWrite bool
	Objects            Objects
}

// Quota is a source's storage use.
type Quota struct {
	UsedBytes  int64
	LimitBytes int64 // 0 when unknown
}

// Grant is what the caller may do: a connection's grant intersected with a key's scopes, or
// everything for the user themself.
type Grant struct {
	// OperationClasses allowed; nil means all (the end user acting for themself).
	OperationClasses []string
}

// Billing is a live developer's commercial context; nil for test mode and end users, which are
// never billed.
type Billing struct {
	// Usage is this month's metered usage so far.
	Usage Usage
	// CeilingCents is the monthly spending ceiling; SpentCents what is already rated this month.
	CeilingCents, SpentCents int64
	// CanBill is whether the caller may incur charges (a key with billable_execute).
	CanBill bool
}

// Usage is a month's usage on the meters a plan estimates.
type Usage struct {
	Plans, Executions                  int64
	TransferredBytes, StoredByteMonths int64
}

// OneClickTarget returns the https URL a List-Unsubscribe header offers for RFC 8058 one-click
// unsubscription, when the message also carries List-Unsubscribe-Post (post).
func OneClickTarget(listUnsubscribe string, post bool) (string, bool) {
	if !post {
		return "", false
	}
	for _, part := range strings.Split(listUnsubscribe, ",") {
		part = strings.TrimSpace(part)
		if !strings.HasPrefix(part, "<") || !strings.HasSuffix(part, ">") {
			continue
		}
		u, err := url.Parse(part[1 : len(part)-1])
		if err == nil && u.Scheme == "https" && u.Host != "" && u.User == nil {
			return u.String(), true
		}
	}
	return "", false
}
