package wire

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"unicode/utf8"
)

// checkStrict rejects what encoding/json would let through silently: bytes that are not
// UTF-8 (it would turn them into U+FFFD) and an object with the same key twice (it would keep
// the last). Either would let two readers of one request disagree about what it says.
func checkStrict(data []byte) error {
	if !utf8.Valid(data) {
		return &Error{Msg: "the body is not valid UTF-8"}
	}
	d := json.NewDecoder(bytes.NewReader(data))
	_, err := walkValue(d, "")
	return err
}

// walkValue reads one JSON value from d, checking every object in it for duplicate keys.
func walkValue(d *json.Decoder, path string) (json.Token, error) {
	tok, err := d.Token()
	if err != nil {
		if err == io.EOF {
			return nil, &Error{Msg: "malformed JSON"}
		}
		return nil, &Error{Path: path, Msg: "malformed JSON"}
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for d.More() {
			kt, err := d.Token()
			if err != nil {
				return nil, &Error{Path: path, Msg: "malformed JSON"}
			}
			key, _ := kt.(string)
			p := join(path, key)
			if seen[key] {
				return nil, &Error{Path: p, Msg: "appears more than once"}
			}
			seen[key] = true
			if _, err := walkValue(d, p); err != nil {
				return nil, err
			}
		}
		if _, err := d.Token(); err != nil { // '}'
			return nil, &Error{Path: path, Msg: "malformed JSON"}
		}
	case json.Delim('['):
		for i := 0; d.More(); i++ {
			if _, err := walkValue(d, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return nil, err
			}
		}
		if _, err := d.Token(); err != nil { // ']'
			return nil, &Error{Path: path, Msg: "malformed JSON"}
		}
	}
	return tok, nil
}
