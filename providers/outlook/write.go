package outlook

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"net/http"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"svc.dev/svc/providers"
)

// MaxMIMEBytes is the largest message Write stores. Graph takes a message's
// MIME in one request of at most 4 MB (it answers 413 beyond) and offers no
// upload session for MIME (upload sessions are for attachments); the MIME
// travels base64-encoded, so 3 MiB of MIME make a 4 MiB request.
const MaxMIMEBytes = 3 << 20

// createAttempts bounds how many times Write sends one message's POST when
// the answer is lost and a lookup finds nothing stored.
const createAttempts = 3

// graphID matches Graph's message ids (REST and immutable ids: URL-safe
// base64 of 20 characters and more, "AAMkAG..." or "AAkALg...").
var graphID = regexp.MustCompile(`^[A-Za-z0-9_+=-]{20,}$`)

// Write implements providers.Writer: the content is a message's MIME
// (RFC 5322), stored in the mail folder the path names.
//
// The path is a folder path as the listing writes containers ("Inbox",
// "Inbox/Lists"). When the whole path is not a folder, its last segment
// is taken as the message's name (svc's destination paths end with one:
// "{source_id}/{path}") and dropped, for an Outlook message has no name;
// the folders before it are created when missing, and a path of one
// segment that is not a folder means Inbox. The message is created from
// its MIME (POST mailFolders/{id}/messages, text/plain, base64), which
// Graph files as a draft. A message whose Message-ID the folder already
// holds is returned as it is, unless Overwrite, which stores the new one
// and moves the old ones to Deleted Items. The POST is not resent blindly
// after a 5xx or a lost connection: the folder is searched for the
// Message-ID first, so a retried write never leaves two copies.
//
// A restore to the original place (mode restore, the path a message id,
// as svc's engine names it) moves the message back out of Deleted Items,
// to the folder its trash came from (providers.MetaTrashResult) or, not
// knowing it or that folder gone, to Inbox; a message no longer in the
// mailbox (Deleted Items emptied) is ErrNotFound.
func (p *Provider) Write(ctx context.Context, req providers.WriteRequest, body io.Reader) (providers.Object, error) {
	if req.Mode == providers.WriteRestore && graphID.MatchString(req.Path) {
		return p.restoreByID(ctx, req, body)
	}
	content, err := io.ReadAll(io.LimitReader(body, MaxMIMEBytes+1))
	if err != nil {
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("read content: %w", err))
	}
	if len(content) > MaxMIMEBytes {
		_, _ = io.Copy(io.Discard, body)
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("a message over %d bytes of MIME (Graph's 4 MB request, base64): %w", MaxMIMEBytes, providers.ErrTooLarge))
	}
	sum := sha256.Sum256(content)
	if err := check(req, int64(len(content)), hex.EncodeToString(sum[:])); err != nil {
		return providers.Object{}, p.err("write", req.Path, err)
	}
	if len(content) == 0 {
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("no content: a message needs its MIME: %w", providers.ErrInvalidArgument))
	}
	fid, err := p.folderFor(ctx, req.Path, false)
	if err != nil {
		return providers.Object{}, p.err("write", req.Path, err)
	}
	mid := messageID(content)
	var old []string // messages with this Message-ID in the folder before the write
	if mid != "" {
		// Two writes of one message at once (a plan's duplicates) would each find none and
		// create it twice: the second waits, then finds the first's.
		defer p.writing.Lock(mid)()
		found, err := p.findByMessageID(ctx, fid, mid)
		if errors.Is(err, providers.ErrNotFound) {
			// The folder went away since svc read the tree: read it again.
			if fid, err = p.folderFor(ctx, req.Path, true); err == nil {
				found, err = p.findByMessageID(ctx, fid, mid)
			}
		}
		if err != nil {
			return providers.Object{}, p.err("write", req.Path, err)
		}
		if len(found) > 0 && !req.Overwrite {
			o, err := p.written(ctx, found[0].ID, -1)
			if err != nil {
				return providers.Object{}, p.err("write", req.Path, err)
			}
			return rendered(o), nil
		}
		for _, m := range found {
			old = append(old, m.ID)
		}
	}
	m, err := p.create(ctx, fid, mid, content, old)
	if err != nil {
		return providers.Object{}, p.err("write", req.Path, err)
	}
	if mid != "" && !sameMessageID(m.InternetMessageID, mid) {
		_, _ = p.move(ctx, m.ID, "deleteditems")
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("Graph stored the message under Message-ID %q, sent %q; it was moved to Deleted Items: %w", m.InternetMessageID, mid, providers.ErrInvalidData))
	}
	id := m.ID
	if m.ParentFolderID != "" && m.ParentFolderID != fid {
		// Filed elsewhere (some tenants put MIME creates in Drafts): move it.
		moved, err := p.move(ctx, id, fid)
		if err != nil {
			return providers.Object{}, p.err("write", req.Path, fmt.Errorf("move the new message %s into its folder: %w", id, err))
		}
		id = cmp.Or(moved.ID, id)
	}
	for _, o := range old {
		if _, err := p.move(ctx, o, "deleteditems"); err != nil && !errors.Is(err, providers.ErrNotFound) {
			return providers.Object{}, p.err("write", req.Path, fmt.Errorf("overwrite: move the previous copy %s to Deleted Items: %w", o, err))
		}
	}
	o, err := p.written(ctx, id, int64(len(content)))
	if err != nil {
		return providers.Object{}, p.err("write", req.Path, err)
	}
	if mid == "" {
		return o, nil // nothing but its bytes says it is the message sent
	}
	return rendered(o), nil
}

// Rendered is the providers.MetaRendered value of a message Write stored: Exchange keeps a
// message it is given as MIME in its own form and serves its own MIME of it back, which need
// not be the bytes sent (headers dropped or added, parts re-encoded).
const Rendered = "mime_rerendered"

// rendered marks o, a message Write stored and found under the Message-ID sent, as kept in
// Exchange's own form (providers.MetaRendered).
func rendered(o providers.Object) providers.Object {
	o.Metadata = maps.Clone(o.Metadata)
	if o.Metadata == nil {
		o.Metadata = map[string]string{}
	}
	o.Metadata[providers.MetaRendered] = Rendered
	return o
}

// check holds content of n bytes and SHA-256 digest to the request's
// expectations.
func check(req providers.WriteRequest, n int64, digest string) error {
	switch {
	case req.SizeBytes >= 0 && n != req.SizeBytes:
		return fmt.Errorf("%d bytes, expected %d: %w", n, req.SizeBytes, providers.ErrInvalidData)
	case req.SHA256 != "" && digest != req.SHA256:
		return fmt.Errorf("content does not match its sha256: %w", providers.ErrInvalidData)
	}
	return nil
}

// messageID returns the Message-ID of a message's header as written
// (Graph's internetMessageId is the header's value), or "" when it has
// none or no header can be read.
func messageID(content []byte) string {
	m, err := mail.ReadMessage(bytes.NewReader(content))
	if err != nil || bareMessageID(m.Header.Get("Message-Id")) == "" {
		return ""
	}
	return strings.TrimSpace(m.Header.Get("Message-Id"))
}

// bareMessageID is a Message-ID without its angle brackets and spaces.
func bareMessageID(v string) string {
	v = strings.TrimSpace(v)
	v = strings.TrimSuffix(strings.TrimPrefix(v, "<"), ">")
	return strings.TrimSpace(v)
}

// sameMessageID compares Message-IDs as written with or without their
// angle brackets.
func sameMessageID(a, b string) bool {
	x := bareMessageID(a)
	return x != "" && x == bareMessageID(b)
}

// create POSTs the message's MIME into the folder. A POST is not resent
// blindly: after a 5xx or a lost connection the folder (and Drafts) is
// searched for the Message-ID (leaving out the messages old lists, there
// before), and only when nothing was stored is it sent again. A message without a Message-ID
// cannot be looked up: a lost answer is then an error that is not
// transient (it may have been stored; sending it again could store it
// twice).
func (p *Provider) create(ctx context.Context, fid, mid string, content []byte, old []string) (*message, error) {
	enc := []byte(base64.StdEncoding.EncodeToString(content))
	path := "/me/mailFolders/" + url.PathEscape(fid) + "/messages"
	for attempt := 1; ; attempt++ {
		var m message
		err := p.c.Create(ctx, path, "text/plain", enc, &m)
		if err == nil {
			if m.ID == "" {
				return nil, fmt.Errorf("create answered no message id: %w", providers.ErrTransient)
			}
			return &m, nil
		}
		if !errors.Is(err, providers.ErrTransient) || ctx.Err() != nil {
			return nil, err
		}
		if mid == "" {
			return nil, fmt.Errorf("%v; the message has no Message-ID to look it up by, so it was not sent again (it may have been stored)", err)
		}
		// The folder, and Drafts: Graph's page says a create saves there by
		// default, and a report has MIME creates land there whatever the
		// folder asked (Write then moves it).
		for _, f := range []string{fid, "drafts"} {
			found, ferr := p.findByMessageID(ctx, f, mid)
			if ferr != nil {
				// Cannot tell: transient; a write tried again looks first.
				return nil, err
			}
			for i := range found {
				if !slices.Contains(old, found[i].ID) {
					return &found[i], nil
				}
			}
		}
		if attempt >= createAttempts {
			return nil, err
		}
		t := time.NewTimer(time.Duration(attempt) * 500 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// findByMessageID lists the folder's messages with that internetMessageId.
func (p *Provider) findByMessageID(ctx context.Context, fid, mid string) ([]message, error) {
	filter := "internetMessageId eq '" + strings.ReplaceAll(mid, "'", "''") + "'"
	link := "/me/mailFolders/" + url.PathEscape(fid) + "/messages?$filter=" + strings.ReplaceAll(url.QueryEscape(filter), "+", "%20") +
		"&$select=id,parentFolderId,internetMessageId&$top=10"
	var page struct {
		Value []message `json:"value"`
	}
	if _, err := p.c.Do(ctx, http.MethodGet, link, nil, nil, &page); err != nil {
		return nil, fmt.Errorf("look up Message-ID %s: %w", mid, err)
	}
	var out []message
	for _, m := range page.Value {
		if sameMessageID(m.InternetMessageID, mid) {
			out = append(out, m)
		}
	}
	return out, nil
}

// written returns the stored message as the listing shows it, with size n
// (the MIME written) when n >= 0.
func (p *Provider) written(ctx context.Context, id string, n int64) (providers.Object, error) {
	m, err := p.get(ctx, id)
	if err != nil {
		return providers.Object{}, err
	}
	folders, trash, err := p.loadFolders(ctx, false)
	if err != nil {
		return providers.Object{}, err
	}
	if _, known := folders[m.ParentFolderID]; !known && m.ParentFolderID != trash {
		if folders, trash, err = p.loadFolders(ctx, true); err != nil {
			return providers.Object{}, err
		}
	}
	o := p.object(m, folders, trash)
	if n >= 0 {
		o.SizeBytes = n
	}
	return o, nil
}

// folderFor resolves a write's path to a mail folder id, creating the
// missing folders (see Write). It reads the folder tree again only when
// the folders it needs are not in the one it has (refresh: always).
func (p *Provider) folderFor(ctx context.Context, target string, refresh bool) (string, error) {
	segs := strings.Split(strings.Trim(target, "/"), "/")
	for _, s := range segs {
		if s == "" || s == "." || s == ".." || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return "", fmt.Errorf("path %q: %w", target, providers.ErrInvalidArgument)
		}
	}
	var byPath map[string]string
	read := func(refresh bool) error {
		folders, _, err := p.loadFolders(ctx, refresh)
		if err != nil {
			return err
		}
		byPath = make(map[string]string, len(folders))
		for id, path := range folders {
			byPath[strings.ToLower(path)] = id
		}
		return nil
	}
	if err := read(refresh); err != nil {
		return "", err
	}
	key := func(segs []string) string { return strings.ToLower(strings.Join(segs, "/")) }
	dir := segs[:len(segs)-1]
	if _, ok := byPath[key(segs)]; !ok && !refresh {
		if _, ok := byPath[key(dir)]; !ok && len(dir) > 0 {
			// Made since the folders were read?
			if err := read(true); err != nil {
				return "", err
			}
		}
	}
	if id, ok := byPath[key(segs)]; ok {
		return id, nil
	}
	if len(dir) == 0 {
		return p.inboxID(ctx)
	}
	parent := ""
	for i := range dir {
		path := strings.Join(dir[:i+1], "/")
		if id, ok := byPath[key(dir[:i+1])]; ok {
			parent = id
			continue
		}
		id, err := p.createFolder(ctx, parent, dir[i])
		if errors.Is(err, providers.ErrAlreadyExists) {
			// Made by another writer meanwhile, or hidden from the listing
			// (Deleted Items): read the folders again.
			if err := read(true); err != nil {
				return "", err
			}
			var ok bool
			if id, ok = byPath[key(dir[:i+1])]; !ok {
				return "", fmt.Errorf("folder %q exists but is not one svc writes into (Deleted Items is the trash): %w", path, providers.ErrInvalidArgument)
			}
		} else if err != nil {
			return "", fmt.Errorf("create folder %q: %w", path, err)
		}
		parent = id
		byPath[key(dir[:i+1])] = id
		p.learnFolder(id, path)
	}
	return parent, nil
}

// learnFolder adds a folder svc created to the folder tree it holds. The
// map is replaced, not changed: callers read the one they were given
// without the lock.
func (p *Provider) learnFolder(id, path string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.folders == nil {
		return
	}
	next := make(map[string]string, len(p.folders)+1)
	for k, v := range p.folders {
		next[k] = v
	}
	next[id] = path
	p.folders = next
}

// inboxID returns Inbox's id (read once).
func (p *Provider) inboxID(ctx context.Context) (string, error) {
	p.mu.Lock()
	id := p.inbox
	p.mu.Unlock()
	if id != "" {
		return id, nil
	}
	var inbox mailFolder
	if _, err := p.c.Do(ctx, http.MethodGet, "/me/mailFolders/inbox?$select=id", nil, nil, &inbox); err != nil {
		return "", err
	}
	if inbox.ID == "" {
		return "", fmt.Errorf("inbox without an id: %w", providers.ErrTransient)
	}
	p.mu.Lock()
	p.inbox = inbox.ID
	p.mu.Unlock()
	return inbox.ID, nil
}

// createFolder creates a mail folder at the top of the mailbox (parent "")
// or under parent.
func (p *Provider) createFolder(ctx context.Context, parent, name string) (string, error) {
	link := "/me/mailFolders"
	if parent != "" {
		link += "/" + url.PathEscape(parent) + "/childFolders"
	}
	var f mailFolder
	if _, err := p.c.Do(ctx, http.MethodPost, link, nil, map[string]any{"displayName": name, "isHidden": false}, &f); err != nil {
		return "", err
	}
	if f.ID == "" {
		return "", fmt.Errorf("folder created without an id: %w", providers.ErrTransient)
	}
	return f.ID, nil
}

// restoreByID is Write of a restore to a message's original place: the
// message named by its id is moved out of Deleted Items (see Write). The
// content must be the message's: its Message-ID, when it has one, must be
// the stored message's (else ErrAlreadyExists: something else has the id).
func (p *Provider) restoreByID(ctx context.Context, req providers.WriteRequest, body io.Reader) (providers.Object, error) {
	var head bytes.Buffer
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(sum, &capped{w: &head, left: 256 << 10}), body)
	if err != nil {
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("read content: %w", err))
	}
	if err := check(req, n, hexSum(sum)); err != nil {
		return providers.Object{}, p.err("write", req.Path, err)
	}
	m, err := p.get(ctx, req.Path)
	if errors.Is(err, providers.ErrNotFound) {
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("the message is no longer in the mailbox (Deleted Items was emptied); restore it to a destination: %w", providers.ErrNotFound))
	}
	if err != nil {
		return providers.Object{}, p.err("write", req.Path, err)
	}
	if mid := messageID(head.Bytes()); mid != "" && !sameMessageID(m.InternetMessageID, mid) {
		return providers.Object{}, p.err("write", req.Path, fmt.Errorf("the message with this id is not the content to restore: %w", providers.ErrAlreadyExists))
	}
	_, trash, err := p.loadFolders(ctx, false)
	if err != nil {
		return providers.Object{}, p.err("write", req.Path, err)
	}
	if m.ParentFolderID == trash {
		dest := req.Metadata[providers.MetaTrashResult]
		if dest == "" || dest == trash {
			dest = "inbox"
		}
		_, err := p.move(ctx, req.Path, dest)
		if errors.Is(err, providers.ErrNotFound) && dest != "inbox" {
			// The folder it came from is gone: back into the mailbox at least.
			_, err = p.move(ctx, req.Path, "inbox")
		}
		if err != nil {
			return providers.Object{}, p.err("write", req.Path, fmt.Errorf("move back out of Deleted Items: %w", err))
		}
	}
	o, err := p.written(ctx, req.Path, n)
	if err != nil {
		return providers.Object{}, p.err("write", req.Path, err)
	}
	return o, nil
}

func hexSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }

// capped keeps the first left bytes written to it and drops the rest.
type capped struct {
	w    io.Writer
	left int
}

func (c *capped) Write(b []byte) (int, error) {
	if c.left > 0 {
		k := min(len(b), c.left)
		_, _ = c.w.Write(b[:k])
		c.left -= k
	}
	return len(b), nil
}
