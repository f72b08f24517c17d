package providers

import (
	"context"
	"io"
	"time"
)

// ProtocolVersion is the version of the provider contract this package
// defines and of the plugin protocol (svc.plugin.v1) that carries it. A
// plugin built for another version is refused at the handshake.
const ProtocolVersion = 1

// Page sizes. A List or Changes request with PageSize 0 gets
// DefaultPageSize; providers must clamp larger requests to MaxPageSize.
const (
	DefaultPageSize = 200
	MaxPageSize     = 1000
)

// Config configures one provider instance (a root directory, an endpoint and
// its credentials, a seed). Keys are provider-specific and documented by each
// provider. Values may be secrets: never log a Config.
type Config map[string]string

// Factory opens a provider instance from its configuration. It must not
// block on remote I/O longer than ctx allows.
type Factory func(ctx context.Context, cfg Config) (Provider, error)

// Provider is the interface every provider implements. A Provider is safe
// for concurrent use. Every method takes the sourceRef of the source it acts
// on (an account, a folder, a bucket: provider-specific) and must leave
// provider state unchanged: only the optional capability interfaces change
// anything.
type Provider interface {
	// Describe returns the provider's static description. It must return the
	// same value for the lifetime of the provider.
	Describe(ctx context.Context) (Description, error)

	// List returns one page of the source's objects in a stable order. An
	// empty PageToken starts a listing; the next call passes the returned
	// NextPageToken, which is empty on the last page. Page tokens are opaque,
	// stateless (valid in another process or after a restart) and must not
	// skip or repeat objects while the source is unchanged. The last page
	// carries the source's revision marker covering the listing; other pages
	// may carry it too.
	List(ctx context.Context, req ListRequest) (Page, error)

	// Changes returns one page of changes since a marker obtained from List or
	// Changes. The last page carries the new marker. A provider that cannot
	// compute a delta from the given marker returns ErrMarkerExpired and the
	// caller lists the source again.
	Changes(ctx context.Context, req ChangesRequest) (ChangePage, error)

	// Fetch opens an object's content. If ExpectedVersion is set and the
	// object's current version differs, Fetch returns a *VersionMismatchError
	// and no content. The caller must close Content.Body.
	Fetch(ctx context.Context, req FetchRequest) (*Content, error)
}

// Trasher is implemented by providers that can move an object to a trash
// from which it can be restored. Trash must refuse (with a
// *VersionMismatchError) when ExpectedVersion is set and differs.
type Trasher interface {
	Trash(ctx context.Context, req ActionRequest) (ActionResult, error)
}

// BatchTrasher is implemented by providers that can trash several objects
// in one call (one round trip to a plugin process or a remote API). Each
// request is handled as Trash would handle it on its own, with its own
// version check; TrashBatch returns one outcome per request, in the
// requests' order. It returns an error only when the call as a whole
// failed, and then any of the objects may or may not have been trashed.
// Callers send at most MaxBatchSize requests; a provider refuses more with
// ErrInvalidArgument.
type BatchTrasher interface {
	TrashBatch(ctx context.Context, reqs []ActionRequest) ([]ActionOutcome, error)
}

// MaxBatchSize is the most requests one batch call carries.
const MaxBatchSize = 1000

// BatchFetcher is implemented by providers that can fetch several small
// objects in one call (one round trip to a plugin process or a remote API),
// each object's content whole in memory. It is for many small objects (a
// mailbox's messages); large ones keep Fetch's stream.
//
// FetchBatch handles each request as Fetch would handle it on its own, with
// its own version check and its own error, and calls fn exactly once for
// each request, in the requests' order, before it returns. An object larger
// than MaxInlineBytes, or whose content would take the call's total past
// MaxFetchBatchBytes, is not read: its outcome is Deferred and the caller
// fetches it with Fetch. FetchBatch returns an error only when the call as
// a whole failed; the requests fn was not called for were then not fetched.
// Callers send at most MaxBatchSize requests; a provider refuses more with
// ErrInvalidArgument. fn must not block for long: a plugin host calls it
// while the call's stream is open.
type BatchFetcher interface {
	FetchBatch(ctx context.Context, reqs []FetchRequest, fn func(i int, out FetchOutcome)) error
}

// Limits of a batch fetch's content.
const (
	// MaxInlineBytes is the largest object a batch fetch carries.
	MaxInlineBytes = 1 << 20
	// MaxFetchBatchBytes bounds the content one batch fetch carries in all,
	// and so the memory it takes.
	MaxFetchBatchBytes = 8 << 20
)

// FetchOutcome is one request's outcome in a batch fetch: the object as
// Fetch would return it and its whole content, or Deferred, or the error
// Fetch would have returned for it alone.
type FetchOutcome struct {
	Object   Object
	Content  []byte // len(Content) == Object.SizeBytes; the receiver may keep it
	Deferred bool   // not fetched in this call (too large for it): use Fetch
	Err      error
}

// InlineBudget counts a batch fetch's content against MaxInlineBytes and
// MaxFetchBatchBytes. The zero value is an empty budget.
type InlineBudget struct{ used int64 }

// Take reports whether an object of size bytes fits in the batch, and if
// so counts it.
func (b *InlineBudget) Take(size int64) bool {
	if size < 0 || size > MaxInlineBytes || b.used+size > MaxFetchBatchBytes {
		return false
	}
	b.used += size
	return true
}

// ActionOutcome is the outcome of one request of a batch: its result, or
// the error Trash would have returned for it alone.
type ActionOutcome struct {
	Result ActionResult
	Err    error
}

// Remover is implemented by providers that can delete an object
// permanently. Remove must refuse (with a *VersionMismatchError) when
// ExpectedVersion is set and differs.
type Remover interface {
	Remove(ctx context.Context, req ActionRequest) (ActionResult, error)
}

// Untrasher is implemented by providers that can restore a trashed object
// to its original place. It is given the ActionResult.ResultID that Trash
// returned and must be idempotent: untrashing an object that is already back
// returns it.
type Untrasher interface {
	Untrash(ctx context.Context, req UntrashRequest) (Object, error)
}

// Writer is implemented by providers that can store content (a copy, a move
// or a restore to a destination). Write reads body to EOF. If req.SHA256 or
// req.SizeBytes (>= 0) is set and the content does not match, nothing is
// left at the destination and the error wraps ErrInvalidData. Without
// Overwrite, an existing object at Path gives ErrAlreadyExists.
type Writer interface {
	Write(ctx context.Context, req WriteRequest, body io.Reader) (Object, error)
}

// Quotaer is implemented by providers that can report a source's storage
// use.
type Quotaer interface {
	Quota(ctx context.Context, sourceRef string) (Quota, error)
}

// CredentialWatcher is implemented by providers whose credentials the vendor replaces while
// they run: an OAuth 2.0 refresh answers a new access token and, at vendors that rotate them,
// a new refresh token, after which the one in the source's configuration may stop working.
// The host keeps what it is told in the source's sealed configuration, so that the next open
// (after a restart, on another replica) starts from the newest credentials.
type CredentialWatcher interface {
	// WatchCredentials registers fn, called each time the credentials are replaced with the
	// configuration entries that now hold them (only CredentialKeys: access token, refresh
	// token, token type, expiry). Each call carries the whole current set, so a later call
	// supersedes an earlier one. Credentials replaced before fn was registered are reported
	// to it at once, so a watch that starts late misses no rotation. Calls are serialized, in
	// the order the credentials were issued; fn must not block for long. A later
	// WatchCredentials replaces fn; nil stops the calls.
	WatchCredentials(fn func(Config))
}

// Configuration keys of a source's OAuth credentials: what the connect flow stores and a
// CredentialWatcher reports. Values are secrets: never log them.
const (
	KeyAccessToken  = "access_token"
	KeyRefreshToken = "refresh_token"
	KeyTokenType    = "token_type"
	KeyExpiry       = "expiry" // RFC 3339
)

// CredentialKeys lists the configuration keys a CredentialWatcher may report.
var CredentialKeys = []string{KeyAccessToken, KeyRefreshToken, KeyTokenType, KeyExpiry}

// Credentials returns the CredentialKeys entries of cfg (nil when it has none).
func Credentials(cfg Config) Config {
	var out Config
	for _, k := range CredentialKeys {
		if v, ok := cfg[k]; ok {
			if out == nil {
				out = Config{}
			}
			out[k] = v
		}
	}
	return out
}

// Description is a provider's static description.
type Description struct {
	Name             Name
	ProtocolVersion  int
	DisplayName      string
	OperationClasses []OperationClass // what the provider can be granted
	Capabilities     []Capability     // optional interfaces it implements
	ObjectKinds      []Kind           // kinds its objects can have
	MarkerKinds      []MarkerKind     // kinds of revision markers it returns
}

// Marker is a source revision marker: the plan's sourceMarkers kind and
// value. It moves when the source's content changes.
type Marker struct {
	Kind  MarkerKind
	Value string
}

// IsZero reports whether m is unset.
func (m Marker) IsZero() bool { return m.Kind == "" && m.Value == "" }

// ListRequest asks for one page of a source's objects.
type ListRequest struct {
	SourceRef string
	PageToken string
	PageSize  int // 0 means DefaultPageSize
}

// Page is one page of objects.
type Page struct {
	Objects       []Object
	NextPageToken string // empty on the last page
	Marker        Marker // set on the last page at least
}

// ChangesRequest asks for changes since a marker.
type ChangesRequest struct {
	SourceRef string
	Since     Marker
	PageToken string
	PageSize  int
}

// ChangeType says what happened to an object.
type ChangeType string

// Change types.
const (
	ChangeUpsert ChangeType = "upsert" // created or modified; Object is set
	ChangeDelete ChangeType = "delete" // gone (removed or trashed)
)

// Change is one entry of a delta.
type Change struct {
	Type     ChangeType
	ObjectID string
	Object   *Object // set for ChangeUpsert
}

// ChangePage is one page of changes.
type ChangePage struct {
	Changes       []Change
	NextPageToken string
	Marker        Marker // the new marker, set on the last page
}

// FetchRequest asks for an object's content.
type FetchRequest struct {
	SourceRef       string
	ObjectID        string
	ExpectedVersion string // empty: any version
	// MaxBytes, when positive, is the most content the caller accepts: what
	// the plan authorized (the expected size, with the tolerance
	// execute.FetchLimit allows). A fetch whose object is larger fails with
	// ErrTooLarge; the plugin host refuses it before any content crosses the
	// boundary, and counts the bytes of a stream against it too. Providers
	// may ignore it: the caller bounds what it reads anyway.
	MaxBytes int64
}

// Content is an open object: its metadata as of the fetch and its bytes.
type Content struct {
	Object Object
	Body   io.ReadCloser
}

// ActionRequest names the object a Trash or Remove acts on.
type ActionRequest struct {
	SourceRef       string
	ObjectID        string
	ExpectedVersion string
}

// ActionResult is the outcome of a Trash or Remove.
type ActionResult struct {
	// ResultID identifies the result at the provider (the receipt's
	// providerResultId); for Trash it is what Untrash needs.
	ResultID   string
	Restorable bool
}

// UntrashRequest asks to restore a trashed object.
type UntrashRequest struct {
	SourceRef string
	ObjectID  string
	ResultID  string // from ActionResult
}

// WriteMode is the manifest's destination mode.
type WriteMode string

// Write modes.
const (
	WriteCopy    WriteMode = "copy"
	WriteMove    WriteMode = "move"
	WriteRestore WriteMode = "restore"
)

// WriteRequest describes content to store.
type WriteRequest struct {
	SourceRef string
	// Path is the destination path within the source, including the name
	// ("Archive/2024/report.pdf"). A provider may ignore it when it assigns
	// ids itself (a content-addressed store); the returned Object says where
	// the content went.
	Path      string
	Kind      Kind
	MIMEType  string
	SizeBytes int64  // -1 when unknown
	SHA256    string // lowercase hex; empty when unknown
	Mode      WriteMode
	Overwrite bool
	Metadata  map[string]string
}

// MetaTrashResult is the WriteRequest.Metadata key under which svc's
// engine passes, with a restore to an object's original place (Mode
// WriteRestore, Path the object's id), the ActionResult.ResultID of the
// Trash that took it, when it has one: a provider whose trash does not
// remember where an object was (a message in Outlook's Deleted Items) puts
// it back there with it, as Untrash would.
const MetaTrashResult = "svc.trash_result"

// MetaRendered is the Object.Metadata key under which a Writer says that the destination keeps
// the content in a form of its own rather than byte for byte (Exchange renders a message it was
// given as MIME into its own store and serves its own MIME back), so that reading the written
// object back gives other bytes. Its value names what changes ("mime_rerendered"). A Writer
// sets it only after checking by its own means that the destination holds the item it was
// given (a message's Message-ID). svc's engine then accepts a write whose read-back differs
// from what was written only when the asset has a verified vault copy, and records the
// destination as not verified, with the value among its lossiness.
const MetaRendered = "svc.rendered"

// Quota is a source's storage use.
type Quota struct {
	UsedBytes  int64
	LimitBytes int64 // 0 when there is no known limit
	TrashBytes int64
	Breakdown  map[string]int64
	ObservedAt time.Time
}

// Object is one provider object's metadata: what plans (providerObjectId,
// expectedVersion, expectedSizeBytes, expectedSha256) and manifests (source
// and content sections) need.
type Object struct {
	ID          string // provider object id; non-empty, no control characters
	ParentID    string
	Version     string // the provider's revision of the object (etag, generation, mtime)
	Kind        Kind
	Name        string
	Path        string
	SizeBytes   int64  // >= 0
	SHA256      string // lowercase hex when known, else empty
	MIMEType    string
	Containers  []string // folders or labels
	CreatedAt   time.Time
	ModifiedAt  time.Time
	Starred     bool
	Shared      bool
	Message     *MessageHeaders // set for mail messages
	Permissions []Permission
	Metadata    map[string]string // the manifest's providerMetadata
}

// MessageHeaders are the mail headers plans and manifests use.
type MessageHeaders struct {
	From                string
	To                  []string
	Cc                  []string
	Subject             string
	Date                time.Time
	ThreadID            string
	ListID              string
	ListUnsubscribe     string
	ListUnsubscribePost bool // List-Unsubscribe-Post: List-Unsubscribe=One-Click
	Snippet             string
}

// PermissionRole is the manifest's permission role.
type PermissionRole string

// Permission roles.
const (
	RoleOwner     PermissionRole = "owner"
	RoleWriter    PermissionRole = "writer"
	RoleCommenter PermissionRole = "commenter"
	RoleReader    PermissionRole = "reader"
	RoleUnknown   PermissionRole = "unknown"
)

// PermissionType is the manifest's permission principal type.
type PermissionType string

// Permission principal types.
const (
	PrincipalUser    PermissionType = "user"
	PrincipalGroup   PermissionType = "group"
	PrincipalDomain  PermissionType = "domain"
	PrincipalAnyone  PermissionType = "anyone"
	PrincipalLink    PermissionType = "link"
	PrincipalUnknown PermissionType = "unknown"
)

// Permission is one grant on an object.
type Permission struct {
	Principal string
	Role      PermissionRole
	Type      PermissionType
}
