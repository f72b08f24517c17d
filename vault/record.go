package vault

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

// Object is a vault object: the spec's Vault object plus what the vault
// needs to keep it (committed_at, whether it holds a reference on its
// content). Meta implementations store it as they like; JSON with these
// tags is stable.
type Object struct {
	ID          string         `json:"id"` // vlt_ ULID
	AssetID     string         `json:"asset_id,omitempty"`
	Name        string         `json:"name,omitempty"`
	Provider    svcv1.Provider `json:"provider,omitempty"`
	SourceID    string         `json:"source_id,omitempty"`
	SHA256      Digest         `json:"sha256"` // zero until the content is known
	SizeBytes   int64          `json:"size_bytes"`
	MIMEType    string         `json:"mime_type,omitempty"`
	Kind        string         `json:"kind,omitempty"` // the provider's content kind ("message", "file", ...)
	State       State          `json:"state"`
	CreatedAt   time.Time      `json:"created_at"`
	CommittedAt time.Time      `json:"committed_at,omitzero"`
	VerifiedAt  time.Time      `json:"verified_at,omitzero"`
	// MediumVerifiedAt is when the object's content was last re-read from
	// the storage medium itself (not a cache of the write: see
	// backend.MediumReader) and its SHA-256 matched: at commit, by Verify
	// or by a scrub. Coverage reports on it.
	MediumVerifiedAt time.Time `json:"medium_verified_at,omitzero"`
	ColdSince        time.Time `json:"cold_since,omitzero"`
	HasText          bool      `json:"has_text,omitempty"`
	HasOCR           bool      `json:"has_ocr,omitempty"`
	ManifestID       string    `json:"manifest_id,omitempty"`
	// Reason says why the object is corrupt (the last failed verification).
	Reason string `json:"reason,omitempty"`
	// Held reports that the object counts in its blob's Refs (from commit
	// until deletion), so that the count stays exact across retries.
	Held bool `json:"held,omitempty"`
}

// cold reports whether the object's content is (to be) read from the cold
// tier: it is cold, or corrupt after being cold.
func (o *Object) cold() bool { return !o.ColdSince.IsZero() }

// Proto returns the object as the API resource.
func (o *Object) Proto() *svcv1.VaultObject {
	p := &svcv1.VaultObject{
		Id:        o.ID,
		Sha256:    o.SHA256.String(),
		SizeBytes: o.SizeBytes,
		State:     o.State.Proto(),
		CreatedAt: timestamppb.New(o.CreatedAt),
		HasText:   o.HasText,
		HasOcr:    o.HasOCR,
	}
	if o.SHA256.IsZero() {
		p.Sha256 = ""
	}
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	p.AssetId, p.Name, p.SourceId, p.MimeType, p.ManifestId = opt(o.AssetID), opt(o.Name), opt(o.SourceID), opt(o.MIMEType), opt(o.ManifestID)
	if o.Provider != svcv1.Provider_PROVIDER_UNSPECIFIED {
		p.Provider = o.Provider.Enum()
	}
	if !o.VerifiedAt.IsZero() {
		p.VerifiedAt = timestamppb.New(o.VerifiedAt)
	}
	if !o.ColdSince.IsZero() {
		p.ColdSince = timestamppb.New(o.ColdSince)
	}
	return p
}

// StorageKey is the object's key in the tenant's vault as the manifest
// records it: its content address, "sha256:" and the digest. It stays the
// same when the content moves between tiers or files.
func (o *Object) StorageKey() string { return "sha256:" + o.SHA256.String() }

// ManifestVault returns the manifest's vault section for a committed or
// cold object (nil before the content is committed): verification is
// hash_match (the content was read back and its SHA-256 compared), storage
// class standard on the hot tier and infrequent_access on the cold one.
func (o *Object) ManifestVault() *svcv1.ManifestVault {
	if o.CommittedAt.IsZero() {
		return nil
	}
	m := &svcv1.ManifestVault{
		VaultObjectId: o.ID,
		StorageKey:    o.StorageKey(),
		Sha256:        o.SHA256.String(),
		SizeBytes:     o.SizeBytes,
		CommittedAt:   timestamppb.New(o.CommittedAt),
		VerifiedAt:    timestamppb.New(o.VerifiedAt),
		Verification:  svcv1.VaultVerification_VAULT_VERIFICATION_HASH_MATCH,
		StorageClass:  svcv1.VaultStorageClass_VAULT_STORAGE_CLASS_STANDARD,
	}
	if o.cold() {
		m.StorageClass = svcv1.VaultStorageClass_VAULT_STORAGE_CLASS_INFREQUENT_ACCESS
	}
	return m
}

// Blob is the index record of one piece of content in a tenant: where its
// sealed bytes are, and how many objects use it. Identical content put
// twice is one blob.
type Blob struct {
	Digest Digest `json:"digest"`
	Size   int64  `json:"size"`
	// Refs counts the objects that hold the blob (Object.Held); ColdRefs
	// those of them that read it from the cold tier. The hot copy is kept
	// while Refs > ColdRefs, the cold one while ColdRefs > 0, the blob
	// while Refs > 0.
	Refs     int `json:"refs"`
	ColdRefs int `json:"cold_refs,omitempty"`
	// Hot and Cold are the copies on each tier (nil: none).
	Hot  *Placement `json:"hot,omitempty"`
	Cold *Placement `json:"cold,omitempty"`
	// Text is the sealed extracted text, with its digest and size; or
	// TextIsContent when the content is its own text.
	Text          *Placement `json:"text,omitempty"`
	TextDigest    Digest     `json:"text_digest,omitzero"`
	TextSize      int64      `json:"text_size,omitempty"`
	TextIsContent bool       `json:"text_is_content,omitempty"`
	// TextRange, when not empty, says that the extracted text is this range
	// of the content, verbatim (a plain-text message's body): it is read from
	// the content's copy instead of being stored again.
	TextRange Range `json:"text_range,omitzero"`
	// Name, MIMEType and Kind are those of the object that first stored
	// the content (the svc_vault provider shows them).
	Name      string    `json:"name,omitempty"`
	MIMEType  string    `json:"mime_type,omitempty"`
	Kind      string    `json:"kind,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// hasText reports whether the blob has extracted text.
func (b *Blob) hasText() bool { return b.TextIsContent || b.Text != nil || b.TextRange.Length > 0 }

// Range is a range of bytes of a content's plaintext.
type Range struct {
	Offset int64 `json:"offset"`
	Length int64 `json:"length"`
}

// Placement is where a sealed copy is: a whole file, or a range of a pack
// file shared with other small blobs.
type Placement struct {
	Name   string `json:"name"` // backend file name
	Offset int64  `json:"offset,omitempty"`
	Length int64  `json:"length"`         // sealed bytes
	Pack   bool   `json:"pack,omitempty"` // Name is a pack (see Pack)
	// Format is the seal format version the copy was written in (3: a
	// bound stream, 4: a bound pack entry); a reader accepts no other. 0:
	// written before formats were recorded (version 1 or 2, either read).
	Format uint8 `json:"format,omitempty"`
	// Corrupt is set when the copy failed verification; a copy that
	// verifies again, or a fresh one, clears it.
	Corrupt    bool      `json:"corrupt,omitempty"`
	VerifiedAt time.Time `json:"verified_at,omitzero"`
}

// same reports whether p and q are the same stored bytes: the same whole
// file (rewritten in place keeps its name), or the same range of a pack.
func (p *Placement) same(q *Placement) bool { return p.Name == q.Name && p.Offset == q.Offset }

// good reports whether p is a copy believed intact.
func (p *Placement) good() bool { return p != nil && !p.Corrupt }

// Pack is the index record of a pack file: many small blobs written (and
// fsynced) together. Live counts the placements in it that are still used;
// at zero the file is removed.
type Pack struct {
	Name      string    `json:"name"`
	Size      int64     `json:"size"`
	Live      int       `json:"live"`
	CreatedAt time.Time `json:"created_at"`
}
