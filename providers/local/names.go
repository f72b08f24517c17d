package local

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"svc.dev/svc/providers"
)

// A POSIX file name is any bytes but "/" and NUL: newlines, other control characters and
// invalid UTF-8 included. Object ids, names and paths are UTF-8 without control characters
// (providers.ValidateObject), so a name that is not is listed under its encoded form:
//
//	"%" followed by the name with each control byte (0x00-0x1f, 0x7f), each "%", and each
//	byte that is not part of valid UTF-8 written as "%XX" (two uppercase hex digits).
//
// A name that starts with "%" is encoded too, so that every encoded name is told apart from a
// plain one by its first byte, and decoding is exact. Every other name (valid UTF-8 without
// control characters, the very most) is its own encoded form: ids of ordinary files never
// change. Examples: "a\nb.txt" is "%a%0Ab.txt", "50%.txt" is "50%.txt", "%d" is "%%25d", and
// the Latin-1 "caf\xe9" is "%caf%E9".
//
// Ids are slash-joined encoded names, so an id resolves back to exactly one path.

// encodeName returns the encoded form of a file name.
func encodeName(name string) string {
	if !needsEncoding(name) {
		return name
	}
	var b strings.Builder
	b.Grow(len(name) + 8)
	b.WriteByte('%')
	for i := 0; i < len(name); {
		c := name[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f || c == '%' {
				fmt.Fprintf(&b, "%%%02X", c)
			} else {
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(name[i:])
		if r == utf8.RuneError && n == 1 {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteString(name[i : i+n])
		}
		i += n
	}
	return b.String()
}

func needsEncoding(name string) bool {
	return strings.HasPrefix(name, "%") || !utf8.ValidString(name) || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// decodeName returns the file name an encoded name stands for. It refuses what encodeName
// never makes, so that each name has exactly one encoded form.
func decodeName(enc string) (string, error) {
	body, ok := strings.CutPrefix(enc, "%")
	if !ok {
		if needsEncoding(enc) {
			return "", fmt.Errorf("name %q should be encoded", enc)
		}
		return enc, nil
	}
	var b strings.Builder
	b.Grow(len(body))
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(body) {
			return "", fmt.Errorf("name %q: truncated escape", enc)
		}
		v, ok := unhex(body[i+1], body[i+2])
		if !ok {
			return "", fmt.Errorf("name %q: bad escape", enc)
		}
		b.WriteByte(v)
		i += 2
	}
	name := b.String()
	if encodeName(name) != enc {
		return "", fmt.Errorf("name %q is not in its encoded form", enc)
	}
	return name, nil
}

func unhex(a, b byte) (byte, bool) {
	d := func(c byte) (byte, bool) {
		switch {
		case '0' <= c && c <= '9':
			return c - '0', true
		case 'A' <= c && c <= 'F':
			return c - 'A' + 10, true
		}
		return 0, false
	}
	x, ok1 := d(a)
	y, ok2 := d(b)
	return x<<4 | y, ok1 && ok2
}

// encodePath encodes each name of a slash-separated path.
func encodePath(parts ...string) string {
	enc := make([]string, len(parts))
	for i, p := range parts {
		enc[i] = encodeName(p)
	}
	return strings.Join(enc, "/")
}

// decodeStored is decodeName for names svc may have stored before names were encoded: a
// name that is not an encoded form but is valid as it is (UTF-8 without control characters,
// so it starts with "%": "%d.txt") is taken as it is. That is the id such a file had then,
// and never one encodeName makes now ("%d.txt" is now "%%25d.txt"), so old plans, receipts
// and page tokens still reach it.
func decodeStored(enc string) (string, error) {
	name, err := decodeName(enc)
	if err != nil && utf8.ValidString(enc) && !strings.ContainsFunc(enc, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return enc, nil
	}
	return name, err
}

// decodeID returns the slash-separated file path an object id stands for; an id that is not
// an encoded path is not found.
func decodeID(id string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("local: object id %q: %w", id, providers.ErrNotFound)
	}
	parts := strings.Split(id, "/")
	for i, p := range parts {
		name, err := decodeStored(p)
		if err != nil || name == "" {
			return "", fmt.Errorf("local: object id %q: %w", id, providers.ErrNotFound)
		}
		parts[i] = name
	}
	return strings.Join(parts, "/"), nil
}

// maxIDBytes is the longest object id the provider contract allows (ValidateObject). A file
// whose encoded path is longer (deep trees of long names can reach 4,096 bytes, and encoding
// can triple a name) is not listed; see tooLong.
const maxIDBytes = 1024
