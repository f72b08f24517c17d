package outlook

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/graph"
	"svc.dev/svc/providers/pagetoken"
)

func encodeDeltas(d map[string]string) (string, error) {
	short := make(map[string]string, len(d))
	for id, link := range d {
		short[id] = link
		if tok, ok := strings.CutPrefix(link, deltaPath(id)+"?$deltatoken="); ok && !strings.ContainsAny(tok, "&") {
			short[id] = tokenOnly + tok
		}
	}
	raw, err := json.Marshal(short)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	w, _ := flate.NewWriter(&b, flate.BestCompression)
	_, _ = w.Write(raw)
	_ = w.Close()
	sum := sha256.Sum256(raw)
	return markerPrefix + base64.RawURLEncoding.EncodeToString(b.Bytes()) + "." + hex.EncodeToString(sum[:6]), nil
}

func decodeDeltas(v string) (map[string]string, error) {
	bad := fmt.Errorf("outlook: not a vendor_b_mail marker: %w", providers.ErrMarkerExpired)
	s, ok := strings.CutPrefix(v, markerPrefix)
	s, check, ok2 := strings.Cut(s, ".")
	if !ok || !ok2 {
		return nil, bad
	}
	z, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad
	}
	raw, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(z)), 1<<20))
	if err != nil {
		return nil, bad
	}
	sum := sha256.Sum256(raw)
	var d map[string]string
	if check != hex.EncodeToString(sum[:6]) || json.Unmarshal(raw, &d) != nil || len(d) == 0 {
		return nil, bad
	}
	for id, link := range d {
		if tok, ok := strings.CutPrefix(link, tokenOnly); ok {
			d[id] = deltaPath(id) + "?$deltatoken=" + tok
		} else if !isMessageDelta(link) {
			return nil, bad
		}
	}
	return d, nil
}

// isMessageDelta reports whether a path is a folder's message delta link,
// in the form svc builds or in Graph's own (mailFolders('id')/...).
func isMessageDelta(link string) bool {
	return strings.HasPrefix(strings.ToLower(link), "/me/mailfolders") && strings.Contains(link, "/messages/delta")
}

func deltaPath(folder string) string {
	return "/me/mailFolders/" + url.PathEscape(folder) + "/messages/delta"
}

func (p *Provider) marker(deltas map[string]string) (providers.Marker, error) {
	v, err := encodeDeltas(deltas)
	if err != nil {
		return providers.Marker{}, err
	}
	if len(v) > maxMarkerBytes {
		return providers.Marker{Kind: providers.MarkerNone}, nil
	}
	return providers.Marker{Kind: providers.MarkerDeltaToken, Value: v}, nil
}

// walkState is the position of a listing or a changes listing across the
// folders: the folders still to read (the current one first), the vendor
// cursor in the current one (Link empty: start it), the deltaLinks of the
// folders done, and (changes) whether any change was found.
type walkState struct {
	Folders []string          `json:"f"`
	Cur     graph.Cursor      `json:"c"`
	Deltas  map[string]string `json:"d"`
	Any     bool              `json:"a,omitempty"`
}

const (
	listKind    = "outlook.list"
	changesKind = "outlook.changes"
	maxSteps    = 50 // vendor pages one call reads past while they give nothing
)

func (p *Provider) deltaHeader(n int) http.Header {
	return http.Header{"Prefer": {`IdType="ImmutableId", odata.maxpagesize=` + strconv.Itoa(n)}}
}

// List implements providers.Provider.
func (p *Provider) List(ctx context.Context, req providers.ListRequest) (providers.Page, error) {
	n := providers.ClampPageSize(req.PageSize)
	var st walkState
	if req.PageToken != "" {
		if err := pagetoken.DecodeState(listKind, req.PageToken, &st); err != nil || len(st.Folders) == 0 {
			return providers.Page{}, fmt.Errorf("outlook: list: bad page token: %w", providers.ErrInvalidArgument)
		}
	}
	folders, trash, err := p.loadFolders(ctx, req.PageToken == "")
	if err != nil {
		return providers.Page{}, p.err("list", "", err)
	}
	if req.PageToken == "" {
		st = walkState{Folders: sortedIDs(folders), Deltas: map[string]string{}}
	}
	var page providers.Page
	for step := 0; len(st.Folders) > 0; step++ {
		f := st.Folders[0]
		if st.Cur.Link == "" {
			st.Cur = graph.Cursor{Link: deltaPath(f) + "?" + query}
		} else if !isMessageDelta(st.Cur.Link) {
			return providers.Page{}, fmt.Errorf("outlook: list: bad page token: %w", providers.ErrInvalidArgument)
		}
		msgs, next, done, delta, err := graph.Step[message](ctx, p.c, p.deltaHeader(n), st.Cur, n-len(page.Objects))
		if errors.Is(err, providers.ErrNotFound) && st.Cur.Skip == 0 {
			// The folder went away since the listing started: its messages
			// were deleted or moved (and then listed where they went).
			st.Folders, st.Cur = st.Folders[1:], graph.Cursor{}
			continue
		}
		if err != nil {
			return providers.Page{}, p.err("list", "", err)
		}
		for i := range msgs {
			if msgs[i].Removed == nil {
				page.Objects = append(page.Objects, p.object(&msgs[i], folders, trash))
			}
		}
		if done {
			st.Deltas[f] = delta
			st.Folders, st.Cur = st.Folders[1:], graph.Cursor{}
		} else {
			st.Cur = next
		}
		if len(page.Objects) >= n || (step >= maxSteps && len(st.Folders) > 0) {
			break
		}
	}
	if len(st.Folders) == 0 {
		page.Marker, err = p.marker(st.Deltas)
		return page, err
	}
	page.NextPageToken, err = pagetoken.EncodeState(listKind, st)
	return page, err
}

// Changes implements providers.Provider.
func (p *Provider) Changes(ctx context.Context, req providers.ChangesRequest) (providers.ChangePage, error) {
	n := providers.ClampPageSize(req.PageSize)
	if req.Since.Kind != providers.MarkerDeltaToken {
		return providers.ChangePage{}, fmt.Errorf("outlook: changes since a %s marker: %w", req.Since.Kind, providers.ErrMarkerExpired)
	}
	since, err := decodeDeltas(req.Since.Value)
	if err != nil {
		return providers.ChangePage{}, err
	}
	var st walkState
	if req.PageToken != "" {
		if err := pagetoken.DecodeState(changesKind, req.PageToken, &st); err != nil || len(st.Folders) == 0 {
			return providers.ChangePage{}, fmt.Errorf("outlook: changes: bad page token: %w", providers.ErrInvalidArgument)
		}
	}
	folders, trash, err := p.loadFolders(ctx, req.PageToken == "")
	if err != nil {
		return providers.ChangePage{}, p.err("changes", "", err)
	}
	if req.PageToken == "" {
		all := map[string]string{}
		for id := range since {
			all[id] = ""
		}
		for id := range folders {
			all[id] = ""
		}
		st = walkState{Folders: sortedIDs(all), Deltas: map[string]string{}}
	}
	var page providers.ChangePage
	for step := 0; len(st.Folders) > 0; step++ {
		f := st.Folders[0]
		if st.Cur.Link == "" {
			st.Cur.Link = since[f]
			if st.Cur.Link == "" {
				st.Cur.Link = deltaPath(f) + "?" + query // a folder new since the marker
			}
		}
		if !isMessageDelta(st.Cur.Link) {
			return providers.ChangePage{}, fmt.Errorf("outlook: changes: bad page token: %w", providers.ErrInvalidArgument)
		}
		msgs, next, done, delta, err := graph.Step[message](ctx, p.c, p.deltaHeader(n), st.Cur, n-len(page.Changes))
		if errors.Is(err, providers.ErrNotFound) {
			return providers.ChangePage{}, p.err("changes", "", fmt.Errorf("folder %s is gone: %w", f, providers.ErrMarkerExpired))
		}
		if err != nil {
			return providers.ChangePage{}, p.err("changes", "", err)
		}
		for i := range msgs {
			m := &msgs[i]
			if m.Removed == nil {
				o := p.object(m, folders, trash)
				page.Changes = append(page.Changes, providers.Change{Type: providers.ChangeUpsert, ObjectID: m.ID, Object: &o})
				continue
			}
			gone, err := p.gone(ctx, m.ID, folders)
			if err != nil {
				return providers.ChangePage{}, p.err("changes", m.ID, err)
			}
			if gone {
				page.Changes = append(page.Changes, providers.Change{Type: providers.ChangeDelete, ObjectID: m.ID})
			}
		}
		st.Any = st.Any || len(page.Changes) > 0
		if done {
			st.Deltas[f] = delta
			st.Folders, st.Cur = st.Folders[1:], graph.Cursor{}
		} else {
			st.Cur = next
		}
		if len(page.Changes) >= n || (len(page.Changes) > 0 && len(st.Folders) > 0) || step >= maxSteps {
			break
		}
	}
	if len(st.Folders) == 0 {
		if !st.Any {
			// Graph may issue a new token every round: a round without a change
			// keeps the marker it started from.
			page.Marker = req.Since
			return page, nil
		}
		page.Marker, err = p.marker(st.Deltas)
		return page, err
	}
	page.NextPageToken, err = pagetoken.EncodeState(changesKind, st)
	return page, err
}

// gone reports whether a message that left a folder is out of the listing
// (deleted, or in Deleted Items) rather than moved to another listed
// folder, whose delta reports it.
func (p *Provider) gone(ctx context.Context, id string, folders map[string]string) (bool, error) {
	var m message
	_, err := p.c.Do(ctx, http.MethodGet, "/me/messages/"+url.PathEscape(id)+"?$select=id,parentFolderId", nil, nil, &m)
	if errors.Is(err, providers.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	_, listed := folders[m.ParentFolderID]
	return !listed, nil
}

func (p *Provider) get(ctx context.Context, id string) (*message, error) {
	var m message
	if _, err := p.c.Do(ctx, http.MethodGet, "/me/messages/"+url.PathEscape(id)+"?"+query, nil, nil, &m); err != nil {
		return nil, err
	}
	return &m, nil
}
