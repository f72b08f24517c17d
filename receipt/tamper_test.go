package receipt_test

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"svc.dev/svc/receipt"
)

// leaf is one value of a JSON document and a way to change it in place.
type leaf struct {
	path string
	set  func(v any)
	v    any
}

// leaves lists every value of doc (objects and arrays included, so that whole members and
// elements are changed too), depth first.
func leaves(path string, v any, set func(any), out *[]leaf) {
	*out = append(*out, leaf{path, set, v})
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			p := k
			if path != "" {
				p = path + "." + k
			}
			leaves(p, e, func(n any) { v[k] = n }, out)
		}
	case []any:
		for i, e := range v {
			leaves(fmt.Sprintf("%s[%d]", path, i), e, func(n any) { v[i] = n }, out)
		}
	}
}

// changed returns a different value of the same kind (or a string for null).
func changed(v any) any {
	switch v := v.(type) {
	case nil:
		return "x"
	case bool:
		return !v
	case json.Number:
		f, _ := strconv.ParseFloat(string(v), 64)
		return json.Number(strconv.FormatFloat(f+1, 'f', -1, 64))
	case string:
		return v + "x"
	case []any:
		return append(slices.Clone(v), "x")
	case map[string]any:
		m := map[string]any{"extra": true}
		for k, e := range v {
			m[k] = e
		}
		return m
	}
	panic(v)
}

// Changing any value of the served receipt (every top-level member, every nested member and
// array element) breaks verification, with the error that names the check, in this package's
// Verify and in the independent check.
func TestTamperingBreaksVerification(t *testing.T) {
	s := exampleSigner()
	_, served := issue(t, fullInput(), s)
	keys := keySet(s)

	base, _ := decodeGeneric(served)
	var all []leaf
	leaves("", base, nil, &all)
	covered := map[string]bool{}
	for _, l := range all[1:] { // all[0] is the document
		want := receipt.ErrHashMismatch
		switch l.path {
		case "signature.alg":
			want = receipt.ErrUnsupportedAlgorithm
		case "signature.kid":
			want = receipt.ErrUnknownKey
		case "signature", "signature.sig":
			continue // below, with changes that keep the shape
		case "hash":
			continue
		case "receiptVersion":
			want = receipt.ErrUnsupportedVersion
		}
		doc, _ := decodeGeneric(served)
		var ls []leaf
		leaves("", doc, nil, &ls)
		idx := slices.IndexFunc(ls, func(x leaf) bool { return x.path == l.path })
		ls[idx].set(changed(ls[idx].v))
		tampered, _ := json.Marshal(doc)
		_, err := receipt.Verify(tampered, keys)
		if !errors.Is(err, want) {
			t.Errorf("%s changed: Verify says %v, want %v", l.path, err, want)
		}
		var ve *receipt.VerifyError
		if !errors.As(err, &ve) {
			t.Errorf("%s changed: error %T is not a *VerifyError", l.path, err)
		}
		if independentVerify(tampered, keysByKID(s)) == nil {
			t.Errorf("%s changed: the independent check still accepts it", l.path)
		}
		covered[strings.SplitN(strings.SplitN(l.path, ".", 2)[0], "[", 2)[0]] = true
	}
	for _, name := range receipt.HashedFields {
		if !covered[name] {
			t.Errorf("no tamper case for %s", name)
		}
	}
	// Nested members the spec defines are among the cases.
	paths := make([]string, len(all))
	for i, l := range all {
		paths[i] = l.path
	}
	sort.Strings(paths)
	for _, p := range []string{"actor.grantId", "actor.type", "authorization.rateCardVersion", "objects[0].vaultSha256",
		"objects[0].actions[1]", "objects[4].status", "before[0].usedBytes", "after[0].observedAt", "charges[0].quantity",
		"restoration.until", "restoration.capable", "errors[1]"} {
		if _, ok := slices.BinarySearch(paths, p); !ok {
			t.Errorf("no tamper case for %s", p)
		}
	}

	mutate := func(f func(doc map[string]any)) []byte {
		doc, _ := decodeGeneric(served)
		f(doc)
		b, _ := json.Marshal(doc)
		return b
	}
	sig := func(doc map[string]any) map[string]any { return doc["signature"].(map[string]any) }
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"hash digit", mutate(func(d map[string]any) {
			h := []byte(d["hash"].(string))
			h[0] ^= 1 // '9' <-> '8' keeps it hex
			d["hash"] = string(h)
		}), receipt.ErrHashMismatch},
		{"hash not hex", mutate(func(d map[string]any) { d["hash"] = "zz" }), receipt.ErrMalformedReceipt},
		{"no hash", mutate(func(d map[string]any) { delete(d, "hash") }), receipt.ErrMalformedReceipt},
		{"no signature", mutate(func(d map[string]any) { delete(d, "signature") }), receipt.ErrMalformedReceipt},
		{"null signature", mutate(func(d map[string]any) { d["signature"] = nil }), receipt.ErrMalformedReceipt},
		{"signature not object", mutate(func(d map[string]any) { d["signature"] = "x" }), receipt.ErrMalformedReceipt},
		{"sig changed", mutate(func(d map[string]any) {
			s := []byte(sig(d)["sig"].(string))
			s[0] = map[bool]byte{true: 'A', false: 'B'}[s[0] != 'A']
			sig(d)["sig"] = string(s)
		}), receipt.ErrBadSignature},
		{"sig not base64url", mutate(func(d map[string]any) { sig(d)["sig"] = "!!" }), receipt.ErrMalformedReceipt},
		{"sig short", mutate(func(d map[string]any) { sig(d)["sig"] = "AAAA" }), receipt.ErrMalformedReceipt},
		{"version", mutate(func(d map[string]any) { d["receiptVersion"] = "2" }), receipt.ErrUnsupportedVersion},
		{"member removed", mutate(func(d map[string]any) { delete(d, "charges") }), receipt.ErrHashMismatch},
		{"member added", mutate(func(d map[string]any) { d["note"] = "hi" }), receipt.ErrHashMismatch},
		{"objects reordered", mutate(func(d map[string]any) {
			o := d["objects"].([]any)
			o[0], o[1] = o[1], o[0]
		}), receipt.ErrHashMismatch},
		// A forger who changes content and recomputes the hash cannot sign it.
		{"forged hash", mutate(func(d map[string]any) {
			d["bytesRemoved"] = json.Number("0")
			h, _ := independentHash(mustJSON(d))
			d["hash"] = h
		}), receipt.ErrBadSignature},
		// Signed by another key under the real kid.
		{"other key", mutate(func(d map[string]any) {
			other, _ := receipt.NewKeySigner(otherKey()).Sign(d["hash"].(string))
			sig(d)["sig"] = other.Sig
		}), receipt.ErrBadSignature},
		{"not JSON", []byte(`{"receiptVersion":"1",`), receipt.ErrMalformedReceipt},
		{"not an object", []byte(`["receiptVersion"]`), receipt.ErrMalformedReceipt},
		{"trailing data", append(slices.Clone(served), []byte(`{}`)...), receipt.ErrMalformedReceipt},
		{"duplicate hash", []byte(strings.Replace(string(served), `"hash":`, `"hash":"00","hash":`, 1)), receipt.ErrMalformedReceipt},
		{"duplicate nested", []byte(strings.Replace(string(served), `"intent":"svc"`, `"intent":"svc","x":{"a":1,"a":2}`, 1)), receipt.ErrMalformedReceipt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := receipt.Verify(c.data, keys)
			if !errors.Is(err, c.want) {
				t.Fatalf("Verify: %v, want %v", err, c.want)
			}
			// The independent check reads the first JSON value and keeps the last duplicate,
			// so it has no opinion on those cases.
			lax := c.want == receipt.ErrUnsupportedVersion || strings.Contains(c.name, "duplicate") || c.name == "trailing data"
			if !lax && independentVerify(c.data, keysByKID(s)) == nil {
				t.Fatalf("the independent check accepts it")
			}
		})
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// Problems with the key set, and keys of the wrong kind, are named as such.
func TestVerifyKeySetErrors(t *testing.T) {
	s := exampleSigner()
	_, served := issue(t, fullInput(), s)
	jwk := func(kty, crv, alg, use string) []byte {
		return []byte(fmt.Sprintf(`{"keys":[{"kty":%q,"crv":%q,"x":%q,"kid":%q,"alg":%q,"use":%q}]}`,
			kty, crv, b64(s.Public()), s.KeyID(), alg, use))
	}
	cases := []struct {
		name string
		set  []byte
		want error
	}{
		{"ok", jwk("OKP", "Ed25519", "EdDSA", "sig"), nil},
		{"single JWK", []byte(fmt.Sprintf(`{"kty":"OKP","crv":"Ed25519","x":%q,"kid":%q}`, b64(s.Public()), s.KeyID())), nil},
		{"not JSON", []byte(`{`), receipt.ErrMalformedKeySet},
		{"no keys", []byte(`{}`), receipt.ErrMalformedKeySet},
		{"no kid", []byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AA"}]}`), receipt.ErrMalformedKeySet},
		{"bad x", []byte(fmt.Sprintf(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AAAA","kid":%q}]}`, s.KeyID())), receipt.ErrMalformedKeySet},
		{"duplicate kid", []byte(fmt.Sprintf(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":%[1]q,"kid":%[2]q},{"kty":"OKP","crv":"Ed25519","x":%[1]q,"kid":%[2]q}]}`, b64(s.Public()), s.KeyID())), receipt.ErrMalformedKeySet},
		{"EC key", jwk("EC", "P-256", "ES256", "sig"), receipt.ErrUnsupportedAlgorithm},
		{"X25519", jwk("OKP", "X25519", "", ""), receipt.ErrUnsupportedAlgorithm},
		{"enc key", jwk("OKP", "Ed25519", "EdDSA", "enc"), receipt.ErrUnsupportedAlgorithm},
		{"other kid", receipt.KeySet(receipt.NewKeySigner(otherKey()).Public()), receipt.ErrUnknownKey},
		{"other key under our kid", []byte(fmt.Sprintf(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":%q,"kid":%q}]}`,
			b64(receipt.NewKeySigner(otherKey()).Public()), s.KeyID())), receipt.ErrBadSignature},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := receipt.Verify(served, c.set)
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("Verify: %v, want %v", err, c.want)
			}
		})
	}
}

func b64(b []byte) string {
	return strings.TrimRight(strings.NewReplacer("+", "-", "/", "_").Replace(stdB64(b)), "=")
}

func stdB64(b []byte) string {
	const enc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	var sb strings.Builder
	for i := 0; i < len(b); i += 3 {
		var n uint32
		k := min(3, len(b)-i)
		for j := range 3 {
			n <<= 8
			if j < k {
				n |= uint32(b[i+j])
			}
		}
		for j := range 4 {
			if j <= k {
				sb.WriteByte(enc[n>>(18-6*j)&63])
			} else {
				sb.WriteByte('=')
			}
		}
	}
	return sb.String()
}

func otherKey() []byte {
	seed := sha256.Sum256([]byte("another key"))
	return edKey(seed[:])
}
