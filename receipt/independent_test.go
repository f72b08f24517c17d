package receipt_test

// An independent check of receipts, written from DESIGN.md guarantee 4 and RFC 8785 without
// the code under test (no wire, no gowebpki/jcs): parse the served JSON, drop hash and
// signature, canonicalize by hand, SHA-256, and verify the Ed25519 signature with
// crypto/ed25519.

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
)

// handJCS writes v (decoded by encoding/json with UseNumber) as RFC 8785 canonical JSON.
// It covers what receipts hold: objects, arrays, strings, integers, simple decimals, booleans
// and null.
func handJCS(buf *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		buf.WriteString(strconv.FormatBool(v))
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return err
		}
		switch abs := math.Abs(f); {
		case f == math.Trunc(f) && abs < 1<<53:
			buf.WriteString(strconv.FormatInt(int64(f), 10))
		case abs >= 1e-6 && abs < 1e21:
			buf.WriteString(strconv.FormatFloat(f, 'f', -1, 64))
		default:
			return fmt.Errorf("number %s is outside what this test canonicalizer handles", v)
		}
	case string:
		handString(buf, v)
	case []any:
		buf.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := handJCS(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		// RFC 8785 3.2.3: sort by the UTF-16 code units of the names.
		slices.SortFunc(keys, func(a, b string) int {
			return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		})
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			handString(buf, k)
			buf.WriteByte(':')
			if err := handJCS(buf, v[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("unexpected %T", v)
	}
	return nil
}

// handString escapes as RFC 8785 3.2.2.2: the two-character escapes for \b \t \n \f \r " and
// \, \u00xx (lowercase hex) for other controls, everything else as is.
func handString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			buf.WriteString(`\"`)
		case '\\':
			buf.WriteString(`\\`)
		case '\b':
			buf.WriteString(`\b`)
		case '\t':
			buf.WriteString(`\t`)
		case '\n':
			buf.WriteString(`\n`)
		case '\f':
			buf.WriteString(`\f`)
		case '\r':
			buf.WriteString(`\r`)
		default:
			if r < 0x20 {
				fmt.Fprintf(buf, `\u%04x`, r)
			} else {
				buf.WriteRune(r)
			}
		}
	}
	buf.WriteByte('"')
}

func decodeGeneric(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// independentHash is the hash guarantee 4 defines, recomputed from served bytes.
func independentHash(served []byte) (string, error) {
	doc, err := decodeGeneric(served)
	if err != nil {
		return "", err
	}
	delete(doc, "hash")
	delete(doc, "signature")
	var buf bytes.Buffer
	if err := handJCS(&buf, doc); err != nil {
		return "", err
	}
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:]), nil
}

// independentVerify checks a served receipt with the public keys by kid.
func independentVerify(served []byte, keys map[string]ed25519.PublicKey) error {
	doc, err := decodeGeneric(served)
	if err != nil {
		return err
	}
	want, _ := doc["hash"].(string)
	sig, _ := doc["signature"].(map[string]any)
	got, err := independentHash(served)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("hash: computed %s, receipt has %s", got, want)
	}
	if sig["alg"] != "Ed25519" {
		return fmt.Errorf("alg %v", sig["alg"])
	}
	kid, _ := sig["kid"].(string)
	pub, ok := keys[kid]
	if !ok {
		return fmt.Errorf("no key %q", kid)
	}
	s, _ := sig["sig"].(string)
	if strings.ContainsAny(s, "+/=") {
		return fmt.Errorf("sig %q is not unpadded base64url", s)
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return err
	}
	if !ed25519.Verify(pub, []byte(want), raw) {
		return fmt.Errorf("signature does not verify")
	}
	return nil
}
