package manifest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/providers"
	"svc.dev/svc/wire"
)

// Version is the manifestVersion this package writes.
const Version = "1.0"

// ErrInvalidInput is returned when an Asset or Update cannot make a valid manifest; the error
// names the field.
var ErrInvalidInput = errors.New("invalid manifest input")

// Asset is what discovery (or the first preservation) knows about an asset.
type Asset struct {
	// ManifestID is the manifest's mfs_ id. Empty: New makes one.
	ManifestID string
	AssetID    string // ast_ id
	TenantRef  string // the tenant the asset belongs to
	Provider   svcv1.Provider
	// SourceRef is the svc source the asset lives in (its src_ id).
	SourceRef string
	// AccountLabel is a human label of the source's account (an email address, a folder).
	AccountLabel string
	// Object is the provider's metadata of the asset: the source and content sections.
	Object providers.Object
	// PartSHA256 are the SHA-256 digests of the content's parts, when the provider gives them.
	PartSHA256 []string
	ObservedAt time.Time
}

// Update is what one execution did to an asset. Every part is optional except ExecutionID
// and At.
type Update struct {
	ExecutionID string    // exe_ id
	At          time.Time // when; the manifest's updatedAt becomes the later of it and the current one
	// Observed, when set, is the object's metadata as the execution saw it (the Fetch result):
	// it replaces the source and content sections, observed at At.
	Observed *providers.Object
	// Vault is the verified vault copy; it adds a preserved_as edge (asset -> vault object).
	Vault *Vault
	// Transformations applied to the content (raw MIME capture, text extraction...).
	Transformations []Transformation
	// Derived artifacts; each adds a derived_from edge (artifact -> asset).
	Derived []Derived
	// Destinations written; each adds a copied_to, moved_to or restored_to edge.
	Destinations []Destination
	// DuplicatedBy are the asset ids of duplicates of this asset (the plan's duplicate
	// detection); each adds a duplicated_by edge (asset -> duplicate).
	DuplicatedBy []string
	// Restore, when set, replaces the restore section. When nil and Vault is set,
	// vault_to_destination is added to the restore methods (a committed vault copy can always
	// be written somewhere).
	Restore *Restore
}

// Vault is an asset's verified vault copy.
type Vault struct {
	VaultObjectID string // vlt_ id
	StorageKey    string // where the blob is (content address)
	SHA256        string // lowercase hex
	SizeBytes     int64
	CommittedAt   time.Time
	VerifiedAt    time.Time
	Verification  svcv1.VaultVerification // zero: hash_match
	StorageClass  svcv1.VaultStorageClass // zero: standard
}

// Transformation is one transformation of the asset's content.
type Transformation struct {
	Type         svcv1.TransformationType
	ProducedAt   time.Time
	Producer     string // what produced it ("svc/vault text-extract v1")
	OutputRef    string
	OutputSHA256 string
	Lossy        bool
	Notes        string
}

// Derived is an artifact derived from the asset.
type Derived struct {
	Ref    string // a lineage node reference (see docs/manifests.md)
	Type   string // text, thumbnail, attachment...
	SHA256 string
}

// Destination is one write of the asset to a destination.
type Destination struct {
	DestinationID string // dst_ id, or the src_ id of the original source for a restore in place
	Provider      svcv1.Provider
	ObjectID      string // the object's id at the destination, when known
	Path          string
	Mode          svcv1.DestinationMode
	WrittenAt     time.Time
	Verified      bool
	Lossiness     []string
}

// Restore is how the asset can be restored. capable is true exactly when Methods is not
// empty.
type Restore struct {
	Methods            []svcv1.RestoreMethod
	OriginalRestorable bool
	Notes              string
}

// ObjectRef is the lineage node reference of an object at a source or destination:
// "<src_ or dst_ id>/<object id or path>". Asset, vault object and execution nodes are their
// ids.
func ObjectRef(placeID, objectID string) string { return placeID + "/" + objectID }

// New returns the manifest of a newly discovered asset: source and content from the
// provider's metadata, permissions, an originated_from edge (asset -> its object at the
// source), no vault copy, not restorable. It is sealed (hash set).
func New(a *Asset) (*svcv1.Manifest, error) {
	m, err := Draft(a)
	if err != nil {
		return nil, err
	}
	return m, Seal(m)
}

// Draft is New without the hash: a manifest that the caller passes to Apply, which seals
// it, before it is stored or shown. It spares computing the hash twice when a new manifest
// is updated at once (a first preservation).
func Draft(a *Asset) (*svcv1.Manifest, error) {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidInput, field, fmt.Sprintf(format, args...))
	}
	switch {
	case a.ManifestID != "" && !id.Valid("mfs", a.ManifestID):
		return nil, bad("manifestId", "%q is not an mfs_ id", a.ManifestID)
	case !id.Valid("ast", a.AssetID):
		return nil, bad("assetId", "%q is not an ast_ id", a.AssetID)
	case a.TenantRef == "":
		return nil, bad("tenantRef", "missing")
	case enumName(a.Provider) == "":
		return nil, bad("source.provider", "unset or unknown (%d)", a.Provider)
	case a.SourceRef == "":
		return nil, bad("source.sourceRef", "missing")
	case a.ObservedAt.IsZero():
		return nil, bad("source.observedAt", "missing")
	}
	if err := checkObject(&a.Object); err != nil {
		return nil, bad("source", "%v", err)
	}
	for i, p := range a.PartSHA256 {
		if !isSHA256(p) {
			return nil, bad(fmt.Sprintf("content.partSha256[%d]", i), "%q is not a lowercase hex SHA-256", p)
		}
	}
	at := timestamppb.New(a.ObservedAt)
	m := &svcv1.Manifest{
		ManifestVersion: Version,
		ManifestId:      a.ManifestID,
		AssetId:         a.AssetID,
		TenantRef:       a.TenantRef,
		CreatedAt:       at,
		UpdatedAt:       at,
		Transformations: []*svcv1.ManifestTransformation{},
		Derived:         []*svcv1.ManifestDerived{},
		Destinations:    []*svcv1.ManifestDestination{},
		Executions:      []string{},
		Restore:         &svcv1.ManifestRestore{Methods: []svcv1.RestoreMethod{}},
	}
	if m.ManifestId == "" {
		m.ManifestId = id.NewAt("mfs", a.ObservedAt)
	}
	m.Source = &svcv1.ManifestSource{Provider: a.Provider, SourceRef: clean(a.SourceRef), AccountLabel: clean(a.AccountLabel)}
	observe(m, &a.Object, a.ObservedAt)
	m.Content.PartSha256 = slices.Clone(a.PartSHA256)
	m.Lineage = []*svcv1.ManifestLineage{{
		From: a.AssetID, To: ObjectRef(m.Source.SourceRef, m.Source.ObjectId),
		Relation: svcv1.LineageRelation_LINEAGE_RELATION_ORIGINATED_FROM, At: at,
	}}
	return m, nil
}

// observe sets the source (but provider, sourceRef, accountLabel) and content sections from a
// provider object, keeping content.partSha256 and a sha256 learnt from the vault.
func observe(m *svcv1.Manifest, o *providers.Object, at time.Time) {
	s := m.Source
	s.ObjectId = clean(o.ID)
	s.ParentId = nullable(o.ParentID)
	s.Version = nullable(o.Version)
	s.Path = nullable(o.Path)
	s.Containers = cleanAll(o.Containers)
	s.CreatedAt = timeOrNil(o.CreatedAt)
	s.ModifiedAt = timeOrNil(o.ModifiedAt)
	s.ObservedAt = timestamppb.New(at)
	s.ProviderMetadata = &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for k, v := range o.Metadata {
		s.ProviderMetadata.Fields[clean(k)] = structpb.NewStringValue(clean(v))
	}

	old := m.Content
	c := &svcv1.ManifestContent{
		Kind:      svcv1.ContentKind(parseEnum(svcv1.ContentKind(0).Descriptor(), string(o.Kind), int32(svcv1.ContentKind_CONTENT_KIND_OTHER))),
		Name:      clean(o.Name),
		SizeBytes: o.SizeBytes,
		MimeType:  nullable(o.MIMEType),
		Sha256:    nullable(o.SHA256),
	}
	if c.Name == "" { // the spec requires a name: fall back to the path's last element, or the id
		c.Name = s.ObjectId
		if p := strings.TrimRight(o.Path, "/"); p != "" {
			c.Name = clean(p[strings.LastIndex(p, "/")+1:])
		}
	}
	if old != nil {
		c.PartSha256 = old.PartSha256
		if c.Sha256 == nil && m.Vault != nil && old.GetSha256() == m.Vault.Sha256 {
			c.Sha256 = old.Sha256
		}
	}
	if h := o.Message; h != nil {
		c.Message = &svcv1.ManifestMessage{
			From: clean(h.From), To: cleanAll(h.To), Cc: cleanAll(h.Cc), Subject: clean(h.Subject),
			Date: timeOrNil(h.Date), ThreadId: clean(h.ThreadID), ListId: clean(h.ListID),
			ListUnsubscribe: clean(h.ListUnsubscribe), ListUnsubscribePost: h.ListUnsubscribePost,
			Labels: cleanAll(o.Containers), Snippet: clean(h.Snippet),
		}
	}
	m.Content = c

	m.Permissions = make([]*svcv1.ManifestPermission, 0, len(o.Permissions))
	for _, p := range o.Permissions {
		m.Permissions = append(m.Permissions, &svcv1.ManifestPermission{
			Principal: clean(p.Principal),
			Role:      svcv1.PermissionRole(parseEnum(svcv1.PermissionRole(0).Descriptor(), string(p.Role), int32(svcv1.PermissionRole_PERMISSION_ROLE_UNKNOWN))),
			Type:      svcv1.PrincipalType(parseEnum(svcv1.PrincipalType(0).Descriptor(), string(p.Type), int32(svcv1.PrincipalType_PRINCIPAL_TYPE_UNKNOWN))),
		})
	}
	slices.SortFunc(m.Permissions, func(a, b *svcv1.ManifestPermission) int {
		return cmp.Or(cmp.Compare(a.Principal, b.Principal), cmp.Compare(a.Type, b.Type), cmp.Compare(a.Role, b.Role))
	})
	m.Permissions = slices.CompactFunc(m.Permissions, func(a, b *svcv1.ManifestPermission) bool { return proto.Equal(a, b) })
}

// Apply folds one execution's update into m and seals it again. Applying the same update
// again leaves m (and its hash) unchanged. On error m is unchanged.
func Apply(m *svcv1.Manifest, u *Update) error {
	if err := checkUpdate(m, u); err != nil {
		return err
	}
	at := timestamppb.New(u.At)
	if u.At.After(m.UpdatedAt.AsTime()) {
		m.UpdatedAt = at
	}
	if !slices.Contains(m.Executions, u.ExecutionID) {
		m.Executions = append(m.Executions, u.ExecutionID)
		slices.Sort(m.Executions)
	}
	if u.Observed != nil {
		observe(m, u.Observed, u.At)
	}
	edge := func(from, to string, rel svcv1.LineageRelation, when *timestamppb.Timestamp) {
		addEdge(m, &svcv1.ManifestLineage{From: from, To: to, Relation: rel, At: when, ExecutionId: u.ExecutionID})
	}
	if v := u.Vault; v != nil {
		m.Vault = &svcv1.ManifestVault{
			VaultObjectId: v.VaultObjectID, StorageKey: clean(v.StorageKey), Sha256: v.SHA256, SizeBytes: v.SizeBytes,
			CommittedAt: timestamppb.New(v.CommittedAt), VerifiedAt: timestamppb.New(v.VerifiedAt),
			Verification: cmp.Or(v.Verification, svcv1.VaultVerification_VAULT_VERIFICATION_HASH_MATCH),
			StorageClass: cmp.Or(v.StorageClass, svcv1.VaultStorageClass_VAULT_STORAGE_CLASS_STANDARD),
		}
		if m.Content.Sha256 == nil {
			m.Content.Sha256 = proto.String(v.SHA256) // now known: the verified copy's digest
		}
		edge(m.AssetId, v.VaultObjectID, svcv1.LineageRelation_LINEAGE_RELATION_PRESERVED_AS, m.Vault.CommittedAt)
		if u.Restore == nil {
			addMethods(m.Restore, svcv1.RestoreMethod_RESTORE_METHOD_VAULT_TO_DESTINATION)
		}
	}
	for _, t := range u.Transformations {
		mt := &svcv1.ManifestTransformation{Type: t.Type, ProducedAt: timestamppb.New(t.ProducedAt), Producer: clean(t.Producer),
			OutputRef: clean(t.OutputRef), OutputSha256: t.OutputSHA256, Lossy: t.Lossy, Notes: clean(t.Notes)}
		i := slices.IndexFunc(m.Transformations, func(x *svcv1.ManifestTransformation) bool {
			return x.Type == mt.Type && x.Producer == mt.Producer && x.OutputRef == mt.OutputRef && x.OutputSha256 == mt.OutputSha256
		})
		if i >= 0 {
			m.Transformations[i] = mt
		} else {
			m.Transformations = append(m.Transformations, mt)
		}
	}
	slices.SortFunc(m.Transformations, func(a, b *svcv1.ManifestTransformation) int {
		return cmp.Or(a.ProducedAt.AsTime().Compare(b.ProducedAt.AsTime()), cmp.Compare(a.Type, b.Type),
			cmp.Compare(a.Producer, b.Producer), cmp.Compare(a.OutputRef, b.OutputRef), cmp.Compare(a.OutputSha256, b.OutputSha256))
	})
	for _, d := range u.Derived {
		md := &svcv1.ManifestDerived{Ref: clean(d.Ref), Type: clean(d.Type), Sha256: d.SHA256}
		if i := slices.IndexFunc(m.Derived, func(x *svcv1.ManifestDerived) bool { return x.Ref == md.Ref }); i >= 0 {
			m.Derived[i] = md
		} else {
			m.Derived = append(m.Derived, md)
		}
		edge(md.Ref, m.AssetId, svcv1.LineageRelation_LINEAGE_RELATION_DERIVED_FROM, at)
	}
	slices.SortFunc(m.Derived, func(a, b *svcv1.ManifestDerived) int { return cmp.Compare(a.Ref, b.Ref) })
	for _, d := range u.Destinations {
		md := &svcv1.ManifestDestination{DestinationId: clean(d.DestinationID), Provider: d.Provider, ObjectId: nullable(d.ObjectID),
			Path: nullable(d.Path), Mode: d.Mode, ExecutionId: u.ExecutionID, WrittenAt: timestamppb.New(d.WrittenAt),
			Verified: d.Verified, Lossiness: cleanAll(d.Lossiness)}
		i := slices.IndexFunc(m.Destinations, func(x *svcv1.ManifestDestination) bool {
			return x.DestinationId == md.DestinationId && x.Mode == md.Mode && x.ExecutionId == md.ExecutionId &&
				x.GetObjectId() == md.GetObjectId() && x.GetPath() == md.GetPath()
		})
		if i >= 0 {
			m.Destinations[i] = md
		} else {
			m.Destinations = append(m.Destinations, md)
		}
		to := ObjectRef(md.DestinationId, cmp.Or(md.GetObjectId(), md.GetPath()))
		if md.ObjectId == nil && md.Path == nil {
			to = md.DestinationId
		}
		switch d.Mode {
		case svcv1.DestinationMode_DESTINATION_MODE_COPY:
			edge(m.AssetId, to, svcv1.LineageRelation_LINEAGE_RELATION_COPIED_TO, md.WrittenAt)
		case svcv1.DestinationMode_DESTINATION_MODE_MOVE:
			edge(m.AssetId, to, svcv1.LineageRelation_LINEAGE_RELATION_MOVED_TO, md.WrittenAt)
		case svcv1.DestinationMode_DESTINATION_MODE_RESTORE:
			from := m.AssetId
			if m.Vault != nil {
				from = m.Vault.VaultObjectId // restores are written from the vault copy
			}
			edge(from, to, svcv1.LineageRelation_LINEAGE_RELATION_RESTORED_TO, md.WrittenAt)
		}
	}
	slices.SortFunc(m.Destinations, func(a, b *svcv1.ManifestDestination) int {
		return cmp.Or(a.WrittenAt.AsTime().Compare(b.WrittenAt.AsTime()), cmp.Compare(a.DestinationId, b.DestinationId),
			cmp.Compare(a.Mode, b.Mode), cmp.Compare(a.ExecutionId, b.ExecutionId),
			cmp.Compare(a.GetObjectId(), b.GetObjectId()), cmp.Compare(a.GetPath(), b.GetPath()))
	})
	for _, dup := range u.DuplicatedBy {
		edge(m.AssetId, dup, svcv1.LineageRelation_LINEAGE_RELATION_DUPLICATED_BY, at)
	}
	if r := u.Restore; r != nil {
		m.Restore = &svcv1.ManifestRestore{Methods: []svcv1.RestoreMethod{}, OriginalRestorable: r.OriginalRestorable, Notes: clean(r.Notes)}
		addMethods(m.Restore, r.Methods...)
	}
	return Seal(m)
}

func addMethods(r *svcv1.ManifestRestore, methods ...svcv1.RestoreMethod) {
	r.Methods = append(r.Methods, methods...)
	slices.Sort(r.Methods)
	r.Methods = slices.Compact(r.Methods)
	r.Capable = len(r.Methods) > 0
}

// addEdge adds a lineage edge unless the same edge (from, to, relation, execution) is there,
// keeping the lineage sorted by time, then relation, from, to and execution.
func addEdge(m *svcv1.Manifest, e *svcv1.ManifestLineage) {
	if slices.ContainsFunc(m.Lineage, func(x *svcv1.ManifestLineage) bool {
		return x.From == e.From && x.To == e.To && x.Relation == e.Relation && x.ExecutionId == e.ExecutionId
	}) {
		return
	}
	m.Lineage = append(m.Lineage, e)
	slices.SortStableFunc(m.Lineage, func(a, b *svcv1.ManifestLineage) int {
		return cmp.Or(a.At.AsTime().Compare(b.At.AsTime()), cmp.Compare(a.Relation, b.Relation),
			cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To), cmp.Compare(a.ExecutionId, b.ExecutionId))
	})
}

func checkUpdate(m *svcv1.Manifest, u *Update) error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidInput, field, fmt.Sprintf(format, args...))
	}
	switch {
	case m.Source == nil || m.Content == nil || m.Restore == nil || m.UpdatedAt == nil:
		return bad("manifest", "not made by New")
	case !id.Valid("exe", u.ExecutionID):
		return bad("executionId", "%q is not an exe_ id", u.ExecutionID)
	case u.At.IsZero():
		return bad("at", "missing")
	}
	if u.Observed != nil {
		if err := checkObject(u.Observed); err != nil {
			return bad("observed", "%v", err)
		}
	}
	if v := u.Vault; v != nil {
		switch {
		case !id.Valid("vlt", v.VaultObjectID):
			return bad("vault.vaultObjectId", "%q is not a vlt_ id", v.VaultObjectID)
		case v.StorageKey == "":
			return bad("vault.storageKey", "missing")
		case !isSHA256(v.SHA256):
			return bad("vault.sha256", "%q is not a lowercase hex SHA-256", v.SHA256)
		case v.SizeBytes < 0:
			return bad("vault.sizeBytes", "negative")
		case v.CommittedAt.IsZero() || v.VerifiedAt.IsZero():
			return bad("vault.committedAt", "committedAt and verifiedAt are required")
		case v.Verification != 0 && enumName(v.Verification) == "":
			return bad("vault.verification", "unknown (%d)", v.Verification)
		case v.StorageClass != 0 && enumName(v.StorageClass) == "":
			return bad("vault.storageClass", "unknown (%d)", v.StorageClass)
		}
	}
	for i, t := range u.Transformations {
		f := fmt.Sprintf("transformations[%d]", i)
		switch {
		case enumName(t.Type) == "":
			return bad(f+".type", "unset or unknown (%d)", t.Type)
		case t.ProducedAt.IsZero():
			return bad(f+".producedAt", "missing")
		case t.Producer == "":
			return bad(f+".producer", "missing")
		case t.OutputSHA256 != "" && !isSHA256(t.OutputSHA256):
			return bad(f+".outputSha256", "%q is not a lowercase hex SHA-256", t.OutputSHA256)
		}
	}
	for i, d := range u.Derived {
		f := fmt.Sprintf("derived[%d]", i)
		switch {
		case d.Ref == "":
			return bad(f+".ref", "missing")
		case d.Type == "":
			return bad(f+".type", "missing")
		case d.SHA256 != "" && !isSHA256(d.SHA256):
			return bad(f+".sha256", "%q is not a lowercase hex SHA-256", d.SHA256)
		}
	}
	for i, d := range u.Destinations {
		f := fmt.Sprintf("destinations[%d]", i)
		switch {
		case d.DestinationID == "":
			return bad(f+".destinationId", "missing")
		case enumName(d.Provider) == "":
			return bad(f+".provider", "unset or unknown (%d)", d.Provider)
		case enumName(d.Mode) == "":
			return bad(f+".mode", "unset or unknown (%d)", d.Mode)
		case d.WrittenAt.IsZero():
			return bad(f+".writtenAt", "missing")
		}
	}
	for i, dup := range u.DuplicatedBy {
		if !id.Valid("ast", dup) || dup == m.AssetId {
			return bad(fmt.Sprintf("duplicatedBy[%d]", i), "%q is not another asset's ast_ id", dup)
		}
	}
	if r := u.Restore; r != nil {
		for i, meth := range r.Methods {
			if enumName(meth) == "" {
				return bad(fmt.Sprintf("restore.methods[%d]", i), "unset or unknown (%d)", meth)
			}
		}
	}
	return nil
}

func checkObject(o *providers.Object) error {
	switch {
	case o.ID == "":
		return errors.New("object id missing")
	case o.SizeBytes < 0:
		return fmt.Errorf("object %q: negative size", o.ID)
	case o.SHA256 != "" && !isSHA256(o.SHA256):
		return fmt.Errorf("object %q: sha256 %q is not lowercase hex", o.ID, o.SHA256)
	}
	return nil
}

func enumName(e protoreflect.Enum) string { return wire.EnumString(e.Descriptor(), e.Number()) }

func parseEnum(ed protoreflect.EnumDescriptor, s string, dflt int32) protoreflect.EnumNumber {
	if n, ok := wire.ParseEnum(ed, s); ok {
		return n
	}
	return protoreflect.EnumNumber(dflt)
}

// clean makes s valid UTF-8 (protobuf strings must be), replacing bad bytes with U+FFFD as the
// wire format would.
func clean(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r) // utf8.RuneError (U+FFFD) for each bad byte
		i += n
	}
	return b.String()
}

func cleanAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = clean(s)
	}
	return out
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return proto.String(clean(s))
}

func timeOrNil(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
