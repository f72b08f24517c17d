package dropbox

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strings"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/contenthash"
)

// Fetch implements providers.Provider.
func (p *Provider) Fetch(ctx context.Context, req providers.FetchRequest) (*providers.Content, error) {
	if !strings.HasPrefix(req.ObjectID, "/") {
		return nil, p.err("fetch", req.ObjectID, fmt.Errorf("not a vendor_c_files id: %w", providers.ErrNotFound))
	}
	arg, _ := json.Marshal(map[string]string{"path": req.ObjectID})
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.content+"/2/files/download", nil)
	if err != nil {
		return nil, p.err("fetch", req.ObjectID, providers.ErrInvalidArgument)
	}
	hreq.Header.Set("Dropbox-API-Arg", asciiJSON(arg))
	resp, err := p.http.Do(hreq)
	if err != nil {
		return nil, p.err("fetch", req.ObjectID, transportError("files/download", err))
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, p.err("fetch", req.ObjectID, routeError("files/download", resp))
	}
	var m metadata
	if err := json.Unmarshal([]byte(resp.Header.Get("Dropbox-API-Result")), &m); err != nil || m.PathLower == "" {
		resp.Body.Close()
		return nil, p.err("fetch", req.ObjectID, fmt.Errorf("files/download: no Dropbox-API-Result: %w", providers.ErrTransient))
	}
	if req.ExpectedVersion != "" && m.Rev != req.ExpectedVersion {
		resp.Body.Close()
		return nil, &providers.VersionMismatchError{ObjectID: req.ObjectID, Expected: req.ExpectedVersion, Actual: m.Rev}
	}
	if req.MaxBytes > 0 && m.Size > req.MaxBytes {
		resp.Body.Close()
		return nil, p.err("fetch", req.ObjectID, fmt.Errorf("%d bytes: %w", m.Size, providers.ErrTooLarge))
	}
	m.Tag = "file"
	v := &verifier{r: resp.Body, id: req.ObjectID, size: m.Size, want: m.ContentHash}
	if m.ContentHash != "" {
		v.h = contenthash.NewDropbox()
	}
	return &providers.Content{Object: object(&m), Body: v}, nil
}

// asciiJSON escapes non-ASCII characters, as an HTTP header must carry
// them (the API's documented rule for Dropbox-API-Arg).
func asciiJSON(b []byte) string {
	var out strings.Builder
	for _, r := range string(b) {
		if r < 0x80 {
			out.WriteRune(r)
		} else if r > 0xffff {
			r1, r2 := utf16Pair(r)
			fmt.Fprintf(&out, "\\u%04x\\u%04x", r1, r2)
		} else {
			fmt.Fprintf(&out, "\\u%04x", r)
		}
	}
	return out.String()
}

func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}

// verifier checks content against its size and content_hash as it is read.
type verifier struct {
	r    io.ReadCloser
	id   string
	size int64
	n    int64
	h    hash.Hash
	want string
}

func (v *verifier) Read(b []byte) (int, error) {
	n, err := v.r.Read(b)
	v.n += int64(n)
	if v.h != nil {
		v.h.Write(b[:n])
	}
	if v.n > v.size {
		return n, fmt.Errorf("dropbox: %s: more than the %d bytes listed: %w", v.id, v.size, providers.ErrInvalidData)
	}
	if err == io.EOF {
		switch {
		case v.n != v.size:
			return n, fmt.Errorf("dropbox: %s: %d bytes, listed %d: %w", v.id, v.n, v.size, providers.ErrInvalidData)
		case v.h != nil && hex.EncodeToString(v.h.Sum(nil)) != v.want:
			return n, fmt.Errorf("dropbox: %s: content does not match its content_hash: %w", v.id, providers.ErrInvalidData)
		}
	}
	return n, err
}

func (v *verifier) Close() error { return v.r.Close() }
