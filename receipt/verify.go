package receipt

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/gowebpki/jcs"
)

// Verified is what a successful Verify learned.
type Verified struct {
	ReceiptID   string
	ExecutionID string
	PlanID      string
	Hash        string
	KeyID       string
}

// Verify checks a served receipt against a JWK set (the document at
// /.well-known/svc-receipts.json), offline and from the bytes alone: it parses the receipt as
// generic JSON, drops hash and signature, canonicalizes the rest with RFC 8785, compares its
// SHA-256 with hash, and verifies signature.sig over hash with the key signature.kid. It does
// not need this package's types, so it verifies receipts whatever fields they carry.
//
// Every error is a *VerifyError wrapping one of ErrMalformedReceipt, ErrUnsupportedVersion,
// ErrMalformedKeySet, ErrHashMismatch, ErrUnsupportedAlgorithm, ErrUnknownKey and
// ErrBadSignature: the first check that fails. The content is checked against the hash before
// the signature is checked, so a receipt changed after signing is ErrHashMismatch, and one whose
// hash was replaced as well is ErrBadSignature.
func Verify(receiptJSON, keySetJSON []byte) (*Verified, error) {
	members, err := objectMembers(receiptJSON)
	if err != nil {
		return nil, verifyErr(ErrMalformedReceipt, err.Error())
	}
	var v Verified
	str := func(name string) (string, bool) {
		var s string
		raw, ok := members[name]
		return s, ok && json.Unmarshal(raw, &s) == nil
	}
	v.ReceiptID, _ = str("receiptId")
	v.ExecutionID, _ = str("executionId")
	v.PlanID, _ = str("planId")

	version, ok := str("receiptVersion")
	if !ok {
		return nil, verifyErr(ErrMalformedReceipt, "receiptVersion is missing or not a string")
	}
	if version != Version {
		return nil, verifyErr(ErrUnsupportedVersion, fmt.Sprintf("receiptVersion %q (this verifier knows %q)", version, Version))
	}
	if v.Hash, ok = str("hash"); !ok || !isSHA256(v.Hash) {
		return nil, verifyErr(ErrMalformedReceipt, "hash is missing or not 64 lowercase hex digits")
	}
	rawSig, ok := members["signature"]
	if !ok || bytes.Equal(bytes.TrimSpace(rawSig), []byte("null")) {
		return nil, verifyErr(ErrMalformedReceipt, "the receipt is not signed (no signature)")
	}
	var sig struct {
		Alg, Kid, Sig *string
	}
	if err := json.Unmarshal(rawSig, &sig); err != nil || sig.Alg == nil || sig.Kid == nil || sig.Sig == nil {
		return nil, verifyErr(ErrMalformedReceipt, "signature must be an object with string members alg, kid and sig")
	}
	v.KeyID = *sig.Kid

	keys, err := parseKeySet(keySetJSON)
	if err != nil {
		return nil, verifyErr(ErrMalformedKeySet, err.Error())
	}

	// The hash: JCS of every member but hash and signature.
	var rest bytes.Buffer
	rest.WriteByte('{')
	for name, raw := range members {
		if name == "hash" || name == "signature" {
			continue
		}
		if rest.Len() > 1 {
			rest.WriteByte(',')
		}
		k, _ := json.Marshal(name)
		rest.Write(k)
		rest.WriteByte(':')
		rest.Write(raw)
	}
	rest.WriteByte('}')
	canon, err := jcs.Transform(rest.Bytes())
	if err != nil {
		return nil, verifyErr(ErrMalformedReceipt, "cannot canonicalize: "+err.Error())
	}
	sum := sha256.Sum256(canon)
	if got := hex.EncodeToString(sum[:]); got != v.Hash {
		return nil, verifyErr(ErrHashMismatch, fmt.Sprintf("the content hashes to %s but the receipt says %s: it was changed after signing", got, v.Hash))
	}

	if *sig.Alg != Alg {
		return nil, verifyErr(ErrUnsupportedAlgorithm, fmt.Sprintf("signature.alg is %q, want %q", *sig.Alg, Alg))
	}
	key, ok := keys[v.KeyID]
	if !ok {
		return nil, verifyErr(ErrUnknownKey, fmt.Sprintf("the key set has no key %q", v.KeyID))
	}
	if key.unusable != "" {
		return nil, verifyErr(ErrUnsupportedAlgorithm, fmt.Sprintf("key %q %s", v.KeyID, key.unusable))
	}
	raw := *sig.Sig
	if len(raw) == 88 && strings.HasSuffix(raw, "==") { // tolerate padding
		raw = raw[:86]
	}
	sigBytes, err := b64.Strict().DecodeString(raw)
	if err != nil || len(sigBytes) != ed25519.SignatureSize {
		return nil, verifyErr(ErrMalformedReceipt, "signature.sig is not a base64url Ed25519 signature (64 bytes)")
	}
	if !ed25519.Verify(key.pub, []byte(v.Hash), sigBytes) {
		return nil, verifyErr(ErrBadSignature, fmt.Sprintf("the signature over %s does not verify with key %q", v.Hash, v.KeyID))
	}
	return &v, nil
}

// objectMembers splits a JSON object into its members, refusing anything that is not exactly
// one object with distinct member names (a duplicate hash could otherwise show one value to
// this verifier and another to a reader).
func objectMembers(data []byte) (map[string]json.RawMessage, error) {
	if !json.Valid(data) {
		return nil, fmt.Errorf("not valid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	members := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		if _, dup := members[name]; dup {
			return nil, fmt.Errorf("member %q appears twice", name)
		}
		members[name] = raw
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the object")
	}
	return members, nil
}

type publicKey struct {
	pub      ed25519.PublicKey
	unusable string // why the key cannot verify receipts, if it cannot
}

// parseKeySet reads a JWK set ({"keys":[...]}) or a single JWK. Keys that are not Ed25519 are
// kept (a receipt naming one fails with ErrUnsupportedAlgorithm, not ErrUnknownKey).
func parseKeySet(data []byte) (map[string]publicKey, error) {
	type key struct {
		Kty, Crv, X, Kid, Alg, Use string
	}
	var set struct {
		Keys *[]key `json:"keys"`
		Kty  string `json:"kty"`
		key
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("not a JWK set: %v", err)
	}
	var list []key
	switch {
	case set.Keys != nil:
		list = *set.Keys
	case set.Kty != "":
		set.key.Kty = set.Kty
		list = []key{set.key}
	default:
		return nil, fmt.Errorf("not a JWK set: no keys member")
	}
	out := make(map[string]publicKey, len(list))
	for i, k := range list {
		if k.Kid == "" {
			return nil, fmt.Errorf("keys[%d] has no kid", i)
		}
		if _, dup := out[k.Kid]; dup {
			return nil, fmt.Errorf("kid %q appears twice", k.Kid)
		}
		var pk publicKey
		x, err := b64.Strict().DecodeString(k.X)
		switch {
		case k.Kty != "OKP" || k.Crv != "Ed25519":
			pk.unusable = fmt.Sprintf("is not an Ed25519 key (kty %q, crv %q)", k.Kty, k.Crv)
		case k.Alg != "" && k.Alg != "EdDSA":
			pk.unusable = fmt.Sprintf("is for algorithm %q, not EdDSA", k.Alg)
		case k.Use != "" && k.Use != "sig":
			pk.unusable = fmt.Sprintf("is for use %q, not sig", k.Use)
		case err != nil || len(x) != ed25519.PublicKeySize:
			return nil, fmt.Errorf("key %q: x is not a base64url 32-byte Ed25519 public key", k.Kid)
		default:
			pk.pub = x
		}
		out[k.Kid] = pk
	}
	return out, nil
}
