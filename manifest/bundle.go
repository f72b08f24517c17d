package manifest

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"time"

	"github.com/gowebpki/jcs"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/wire"
)

// BundleVersion is the bundleVersion this package writes.
const BundleVersion = "1.0"

// Errors of bundles.
var (
	// ErrBundle is returned when manifests cannot form a bundle: another tenant's manifest, a
	// manifest out of order or repeated, a count that does not match, a manifest whose hash
	// does not match its content.
	ErrBundle = errors.New("invalid manifest bundle")
	// ErrHashMismatch is returned by VerifyBundle when bundleHash, or a manifest's hash, does
	// not match the content.
	ErrHashMismatch = errors.New("hash mismatch")
	// ErrMalformedBundle is returned by VerifyBundle when the data is not a bundle.
	ErrMalformedBundle = errors.New("malformed manifest bundle")
)

// BundleHeader is what a bundle says about itself.
type BundleHeader struct {
	TenantRef   string
	GeneratedAt time.Time
	// Count is the number of manifests that follow; WriteBundle fails if it is not.
	Count int64
}

// Bundle returns the bundle of ms: the manifests in canonical order (by assetId; ms itself is
// not reordered), count and bundleHash. Every manifest must belong to tenantRef and be sealed.
func Bundle(tenantRef string, generatedAt time.Time, ms []*svcv1.Manifest) (*svcv1.ManifestBundle, error) {
	sorted := slices.Clone(ms)
	slices.SortFunc(sorted, func(a, b *svcv1.Manifest) int { return cmp.Compare(a.AssetId, b.AssetId) })
	b := &svcv1.ManifestBundle{BundleVersion: BundleVersion, GeneratedAt: timestamppb.New(generatedAt), TenantRef: tenantRef,
		Count: int64(len(sorted)), Manifests: sorted}
	if b.Manifests == nil {
		b.Manifests = []*svcv1.Manifest{}
	}
	prev := ""
	for i, m := range sorted {
		if err := checkMember(m, i, tenantRef, prev); err != nil {
			return nil, err
		}
		prev = m.AssetId
	}
	h, err := BundleHash(b)
	if err != nil {
		return nil, err
	}
	b.BundleHash = h
	return b, nil
}

// BundleHash returns a bundle's bundleHash: the lowercase hex SHA-256 of the RFC 8785
// canonical JSON of the bundle as served, without bundleHash.
func BundleHash(b *svcv1.ManifestBundle) (string, error) {
	h := sha256.New()
	if err := wire.Canonical(h, b, BundleHashedFields...); err != nil {
		return "", fmt.Errorf("canonical bundle: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func checkMember(m *svcv1.Manifest, i int, tenantRef, prev string) error {
	_, err := checkMemberCanonical(nil, m, i, tenantRef, prev)
	return err
}

// checkMemberCanonical checks that m may follow prev in tenantRef's bundle and that its hash
// matches its content, and returns m's whole canonical JSON appended to buf.
func checkMemberCanonical(buf []byte, m *svcv1.Manifest, i int, tenantRef, prev string) ([]byte, error) {
	if m.TenantRef != tenantRef {
		return nil, fmt.Errorf("%w: manifests[%d] (%s) belongs to another tenant", ErrBundle, i, m.ManifestId)
	}
	if m.AssetId <= prev {
		return nil, fmt.Errorf("%w: manifests[%d]: asset %s does not sort after %s (manifests must be in assetId order, each asset once)", ErrBundle, i, m.AssetId, prev)
	}
	b, start, end, err := canonical(buf, m)
	if err != nil {
		return nil, fmt.Errorf("manifests[%d]: canonical manifest: %w", i, err)
	}
	if h := hashWithout(b, start, end); h != m.Hash {
		return nil, fmt.Errorf("%w: manifests[%d] (%s): hash %q does not match its content (%s)", ErrBundle, i, m.ManifestId, m.Hash, h)
	}
	return b, nil
}

// WriteBundle streams a bundle to w, exactly as wire.Marshal would write the bundle Bundle
// returns, without holding it: the manifests come from seq in assetId order (as a store keyed by
// asset id lists them) and are written and hashed one at a time. It returns the bundleHash,
// which is the bundle's last member. On error the output is truncated (not valid JSON): a
// server that has started the response should abort it.
func WriteBundle(w io.Writer, h BundleHeader, seq iter.Seq2[*svcv1.Manifest, error]) (string, error) {
	head := &svcv1.ManifestBundle{BundleVersion: BundleVersion, GeneratedAt: timestamppb.New(h.GeneratedAt), TenantRef: h.TenantRef, Count: h.Count}
	// The served form is wire order (bundleHash last, so it can follow the manifests); the
	// hashed form is canonical order (manifests between generatedAt and tenantRef).
	served, err := wire.Marshal(head)
	if err != nil {
		return "", err
	}
	const servedTail = `],"bundleHash":""}`
	if !bytes.HasSuffix(served, []byte(servedTail)) {
		return "", fmt.Errorf("unexpected bundle encoding %s", served)
	}
	canon, err := wire.CanonicalBytes(head, BundleHashedFields...)
	if err != nil {
		return "", err
	}
	cut := bytes.Index(canon, []byte(`"manifests":[]`)) + len(`"manifests":[`)

	sum := sha256.New()
	c := wire.NewCanon(sum)
	c.Raw(canon[:cut]...)
	out := bufio.NewWriterSize(w, 64<<10)
	out.Write(served[:len(served)-len(servedTail)])

	var n int64
	prev := ""
	var buf, cbuf []byte
	for m, err := range seq {
		if err != nil {
			return "", err
		}
		if n == h.Count {
			return "", fmt.Errorf("%w: more manifests than the count %d", ErrBundle, h.Count)
		}
		if cbuf, err = checkMemberCanonical(cbuf[:0], m, int(n), h.TenantRef, prev); err != nil {
			return "", err
		}
		prev = m.AssetId
		if n > 0 {
			c.Raw(',')
			out.WriteByte(',')
		}
		c.Raw(cbuf...)
		c.SetBuffer(c.Buffer()) // flush when large
		if buf, err = wire.Append(buf[:0], m); err != nil {
			return "", err
		}
		if _, err := out.Write(buf); err != nil {
			return "", err
		}
		n++
	}
	if n != h.Count {
		return "", fmt.Errorf("%w: %d manifests, but the count says %d", ErrBundle, n, h.Count)
	}
	c.Raw(canon[cut:]...)
	if err := c.Close(); err != nil {
		return "", err
	}
	bundleHash := hex.EncodeToString(sum.Sum(nil))
	out.WriteString(`],"bundleHash":"` + bundleHash + `"}`)
	return bundleHash, out.Flush()
}

// VerifyBundle checks an exported bundle from its bytes alone: bundleVersion, count, every
// manifest's hash and the bundleHash, recomputed with RFC 8785 over the JSON as it is (not
// through this package's types). Errors wrap ErrMalformedBundle or ErrHashMismatch.
func VerifyBundle(data []byte) error {
	if _, err := jcs.Transform(data); err != nil { // rejects malformed JSON and duplicate members
		return fmt.Errorf("%w: %v", ErrMalformedBundle, err)
	}
	var b map[string]json.RawMessage
	if err := json.Unmarshal(data, &b); err != nil {
		return fmt.Errorf("%w: not a JSON object", ErrMalformedBundle)
	}
	var (
		version, bundleHash string
		count               int64
		manifests           []json.RawMessage
	)
	if json.Unmarshal(b["bundleVersion"], &version) != nil || version != BundleVersion {
		return fmt.Errorf("%w: bundleVersion %s, want %q", ErrMalformedBundle, b["bundleVersion"], BundleVersion)
	}
	if json.Unmarshal(b["bundleHash"], &bundleHash) != nil || json.Unmarshal(b["count"], &count) != nil ||
		json.Unmarshal(b["manifests"], &manifests) != nil || manifests == nil {
		return fmt.Errorf("%w: bundleHash, count or manifests missing or of the wrong type", ErrMalformedBundle)
	}
	if count != int64(len(manifests)) {
		return fmt.Errorf("%w: count %d, but %d manifests", ErrMalformedBundle, count, len(manifests))
	}
	for i, raw := range manifests {
		var m map[string]json.RawMessage
		var h string
		if json.Unmarshal(raw, &m) != nil || json.Unmarshal(m["hash"], &h) != nil {
			return fmt.Errorf("%w: manifests[%d] is not a manifest with a hash", ErrMalformedBundle, i)
		}
		delete(m, "hash")
		got, err := jcsHash(m)
		if err != nil {
			return fmt.Errorf("%w: manifests[%d]: %v", ErrMalformedBundle, i, err)
		}
		if got != h {
			return fmt.Errorf("%w: manifests[%d] hashes to %s, but says %s", ErrHashMismatch, i, got, h)
		}
	}
	delete(b, "bundleHash")
	got, err := jcsHash(b)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMalformedBundle, err)
	}
	if got != bundleHash {
		return fmt.Errorf("%w: the bundle hashes to %s, but bundleHash says %s", ErrHashMismatch, got, bundleHash)
	}
	return nil
}

func jcsHash(members map[string]json.RawMessage) (string, error) {
	b, err := json.Marshal(members)
	if err != nil {
		return "", err
	}
	canon, err := jcs.Transform(b)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}
