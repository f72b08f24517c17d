package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"svc.dev/svc/providers"
)

// FragmentGranularity is the multiple of bytes Graph wants every fragment
// of an upload session but the last to be (320 KiB), and MaxFragment the
// largest fragment it takes (60 MiB).
const (
	FragmentGranularity = 320 << 10
	MaxFragment         = 60 << 20
)

// resumes is how many times an upload session is resumed after a fragment
// failed (a 5xx, a dropped connection) before the upload gives up.
const resumes = 5

// UploadSession uploads n bytes of content, read from r, through a Graph
// upload session: it POSTs createUploadSession at createPath (a path under
// the endpoint ending in ":/createUploadSession") with conflict as the
// item's @microsoft.graph.conflictBehavior ("fail" or "replace"), then PUTs
// the content in fragments of fragment bytes (a positive multiple of
// FragmentGranularity, at most MaxFragment) to the session's uploadUrl with
// Content-Range, without the account's token (the URL is pre-authenticated,
// and Graph may refuse a token there). A fragment that fails with a 5xx or
// a dropped connection is not sent again blindly: the session's status
// (nextExpectedRanges) says where to resume, at most five times. It
// returns the last fragment's answer (the stored driveItem). On failure it
// cancels the session.
func (c *Client) UploadSession(ctx context.Context, createPath, conflict string, r io.ReaderAt, n, fragment int64) ([]byte, error) {
	if n <= 0 || fragment <= 0 || fragment%FragmentGranularity != 0 || fragment > MaxFragment {
		return nil, fmt.Errorf("graph: upload session of %d bytes in fragments of %d: %w", n, fragment, providers.ErrInvalidArgument)
	}
	var session struct {
		UploadURL string `json:"uploadUrl"`
	}
	body := map[string]any{"item": map[string]any{"@microsoft.graph.conflictBehavior": conflict}}
	if _, err := c.Do(ctx, http.MethodPost, createPath, nil, body, &session); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(session.UploadURL, "https://") && !strings.HasPrefix(session.UploadURL, "http://") {
		return nil, fmt.Errorf("graph: upload session without an uploadUrl: %w", providers.ErrTransient)
	}
	done := false
	defer func() {
		if !done { // cancel it: Graph would keep the fragments until it expires
			req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodDelete, session.UploadURL, nil)
			if err == nil {
				if resp, err := c.download.Do(req); err == nil {
					resp.Body.Close()
				}
			}
		}
	}()
	for off, left := int64(0), resumes; ; {
		size := min(fragment, n-off)
		out, err := c.putFragment(ctx, session.UploadURL, r, off, size, n)
		switch {
		case err == nil && out != nil:
			done = true
			return out, nil
		case err == nil:
			off += size
			continue
		case !errors.Is(err, providers.ErrTransient) && !errors.Is(err, errRange) || left == 0:
			return nil, err
		}
		left--
		if off, err = c.sessionOffset(ctx, session.UploadURL); err != nil {
			return nil, err
		}
		if off >= n {
			return nil, fmt.Errorf("graph: upload session holds all %d bytes but never answered the item: %w", n, providers.ErrTransient)
		}
	}
}

// errRange is a fragment Graph did not expect there (416): the session's
// status says where to go on.
var errRange = errors.New("fragment not at the next expected byte")

// putFragment PUTs bytes [off, off+size) of n. It returns the answer's body
// when the upload is complete (200 or 201), nil when the session wants more
// (202).
func (c *Client) putFragment(ctx context.Context, url string, r io.ReaderAt, off, size, n int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, io.NewSectionReader(r, off, size))
	if err != nil {
		return nil, fmt.Errorf("graph: %w", providers.ErrInvalidArgument)
	}
	req.ContentLength = size
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(io.NewSectionReader(r, off, size)), nil }
	req.Header.Set("Content-Range", "bytes "+strconv.FormatInt(off, 10)+"-"+strconv.FormatInt(off+size-1, 10)+"/"+strconv.FormatInt(n, 10))
	req.Header.Set(noRetryHeader, "1") // a failed fragment is resumed from the session's status instead
	resp, err := c.download.Do(req)
	if err != nil {
		return nil, transportError(err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusAccepted:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, nil
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusCreated:
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return nil, fmt.Errorf("graph: %v: %w", err, providers.ErrTransient)
		}
		return b, nil
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		return nil, fmt.Errorf("graph: %w: %w", errRange, Error(resp))
	}
	return nil, Error(resp)
}

// sessionOffset asks an upload session for the first byte it still
// expects.
func (c *Client) sessionOffset(ctx context.Context, url string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, fmt.Errorf("graph: %w", providers.ErrInvalidArgument)
	}
	resp, err := c.download.Do(req)
	if err != nil {
		return 0, transportError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, Error(resp)
	}
	var st struct {
		NextExpectedRanges []string `json:"nextExpectedRanges"`
	}
	if err := decodeJSON(resp.Body, &st); err != nil {
		return 0, err
	}
	if len(st.NextExpectedRanges) == 0 {
		return 0, fmt.Errorf("graph: upload session status without nextExpectedRanges: %w", providers.ErrTransient)
	}
	start, _, _ := strings.Cut(st.NextExpectedRanges[0], "-")
	off, err := strconv.ParseInt(start, 10, 64)
	if err != nil || off < 0 {
		return 0, fmt.Errorf("graph: upload session status %q: %w", st.NextExpectedRanges[0], providers.ErrTransient)
	}
	return off, nil
}

func decodeJSON(r io.Reader, out any) error {
	if err := json.NewDecoder(io.LimitReader(r, 1<<20)).Decode(out); err != nil {
		return fmt.Errorf("graph: decode answer: %v: %w", err, providers.ErrTransient)
	}
	return nil
}
