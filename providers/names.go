package providers

import "slices"

// Name is a provider name, a value of the spec's Provider enumeration.
type Name string

// The spec's Provider enumeration.
const (
	VendorAMail           Name = "vendor_a_mail"
	VendorAFiles          Name = "vendor_a_files"
	VendorBMail           Name = "vendor_b_mail"
	VendorBFiles          Name = "vendor_b_files"
	VendorCFiles          Name = "vendor_c_files"
	VendorDLocal          Name = "vendor_d_local"
	ObjectStoreCompatible Name = "object_store_compatible"
	SvcVault              Name = "svc_vault"
	Simulated             Name = "simulated"
)

// Names lists the spec's Provider enumeration in its order.
var Names = []Name{
	VendorAMail, VendorAFiles, VendorBMail, VendorBFiles, VendorCFiles,
	VendorDLocal, ObjectStoreCompatible, SvcVault, Simulated,
}

// Valid reports whether n is a value of the Provider enumeration.
func (n Name) Valid() bool { return slices.Contains(Names, n) }

// OperationClass is a value of the spec's OperationClass enumeration.
type OperationClass string

// The spec's OperationClass enumeration.
const (
	Discover        OperationClass = "discover"
	Preserve        OperationClass = "preserve"
	Write           OperationClass = "write"
	Remove          OperationClass = "remove"
	Restore         OperationClass = "restore"
	Migrate         OperationClass = "migrate"
	Monitor         OperationClass = "monitor"
	Automate        OperationClass = "automate"
	BillableExecute OperationClass = "billable_execute"
)

// OperationClasses lists the OperationClass enumeration in the spec's order.
var OperationClasses = []OperationClass{
	Discover, Preserve, Write, Remove, Restore, Migrate, Monitor, Automate, BillableExecute,
}

// Valid reports whether c is a value of the OperationClass enumeration.
func (c OperationClass) Valid() bool { return slices.Contains(OperationClasses, c) }

// Kind is an object's content kind (the manifest's content.kind).
type Kind string

// Content kinds.
const (
	KindMessage    Kind = "message"
	KindAttachment Kind = "attachment"
	KindFile       Kind = "file"
	KindFolder     Kind = "folder"
	KindPhoto      Kind = "photo"
	KindVideo      Kind = "video"
	KindStatement  Kind = "statement"
	KindOther      Kind = "other"
)

// Kinds lists every content kind.
var Kinds = []Kind{KindMessage, KindAttachment, KindFile, KindFolder, KindPhoto, KindVideo, KindStatement, KindOther}

// Valid reports whether k is a known content kind.
func (k Kind) Valid() bool { return slices.Contains(Kinds, k) }

// MarkerKind is the kind of a source revision marker (the plan's
// sourceMarkers.kind).
type MarkerKind string

// Marker kinds.
const (
	MarkerHistoryID    MarkerKind = "history_id"
	MarkerDeltaToken   MarkerKind = "delta_token"
	MarkerPageToken    MarkerKind = "page_token"
	MarkerCursor       MarkerKind = "cursor"
	MarkerETag         MarkerKind = "etag"
	MarkerSnapshotHash MarkerKind = "snapshot_hash"
	MarkerNone         MarkerKind = "none"
)

// MarkerKinds lists every marker kind.
var MarkerKinds = []MarkerKind{
	MarkerHistoryID, MarkerDeltaToken, MarkerPageToken, MarkerCursor, MarkerETag, MarkerSnapshotHash, MarkerNone,
}

// Valid reports whether k is a known marker kind.
func (k MarkerKind) Valid() bool { return slices.Contains(MarkerKinds, k) }

// Capability names an optional provider interface.
type Capability string

// Capabilities, one per optional interface.
const (
	CapTrash   Capability = "trash"   // Trasher
	CapRemove  Capability = "remove"  // Remover
	CapUntrash Capability = "untrash" // Untrasher
	CapWrite   Capability = "write"   // Writer
	CapQuota   Capability = "quota"   // Quotaer
	// CapTrashBatch: BatchTrasher. A provider that declares it declares
	// CapTrash too.
	CapTrashBatch Capability = "trash_batch"
	// CapFetchBatch: BatchFetcher.
	CapFetchBatch Capability = "fetch_batch"
	// CapCredentials: CredentialWatcher.
	CapCredentials Capability = "credentials"
)

// Capabilities lists every capability.
var Capabilities = []Capability{CapTrash, CapRemove, CapUntrash, CapWrite, CapQuota, CapTrashBatch, CapFetchBatch, CapCredentials}

// Valid reports whether c is a known capability.
func (c Capability) Valid() bool { return slices.Contains(Capabilities, c) }
