package gmail

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/textproto"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	gm "google.golang.org/api/gmail/v1"
	"google.golang.org/api/googleapi"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/google"
)

// MaxImportBytes is the largest message Write imports: 35 MB, the limit
// of a message sent to users.messages.import through the upload endpoint.
// A larger one is refused with ErrTooLarge before anything is sent.
const MaxImportBytes = 35 << 20

// importAttempts bounds how often one message is sent to messages.import.
// A send that failed in a way that may have come after Gmail stored the
// message (a 5xx, a dropped connection) is sent again only when a lookup
// by the message's Message-ID finds no copy.
const importAttempts = 4

// messageIDPath matches a Gmail message id; a restore whose path is one is
// a restore to the message's original place (svc's engine names that place
// by the object id).
var messageIDPath = regexp.MustCompile(`^[0-9a-f]{16}$`)

// systemLabels are Gmail's system labels a message can be written into,
// by id (their names are their ids). TRASH and DRAFT are not targets: a
// message is not restored into the trash, and a draft is not imported.
var systemLabels = []string{"INBOX", "SPAM", "UNREAD", "STARRED", "IMPORTANT", "SENT",
	"CATEGORY_PERSONAL", "CATEGORY_SOCIAL", "CATEGORY_PROMOTIONS", "CATEGORY_UPDATES", "CATEGORY_FORUMS"}

// Write stores a message (RFC 5322 bytes) in the mailbox with
// users.messages.import, which runs it through Gmail's delivery scanning
// as received mail and keeps it out of Sent; its internal date is its
// Date header's (internalDateSource=dateHeader), it is never classified
// as spam (neverMarkSpam: svc restores what the user kept) and calendar
// invitations in it are not processed.
//
// req.Path names the label to put it in, the way a listing names a
// message's containers: a system label by id (INBOX, SPAM, STARRED,
// CATEGORY_UPDATES, ...; any case), a user label by name ("Receipts",
// "Archive/2024"); "" is INBOX. Any other path is a destination's, the
// label followed by the message's name ("Archive/2024/Minutes.eml", as a
// destination's path template renders it, the way Drive's and OneDrive's
// paths end in a file's name; Outlook's Write reads paths the same way):
// the label is what precedes the last "/", and a name alone is INBOX. A
// user label that does not exist is created (and its parents, for a nested
// name), as Drive's Write creates missing folders: writing into a label is
// what the user asked for. A message written into a user label is not also
// put in the inbox.
//
// Import is not idempotent: each send stores another copy. So a message
// with a Message-ID is first looked up by it (users.messages.list
// q=rfc822msgid:); a copy already there (not in the trash, with the same
// bytes) is returned, given the target label if it lacks it, unless
// Overwrite asks for a new copy; another message with that Message-ID is
// ErrAlreadyExists. A send that fails with a 5xx or a dropped connection is
// not resent blindly: the message is looked up again, and only if no new
// copy is there is it sent again. A message without a Message-ID cannot be
// looked up: it is sent once, and a failure whose outcome is unknown is
// reported as such (not as transient, which would invite a resend).
//
// The stored message is read back (format=raw) and must be the bytes
// sent; a new copy that is not is trashed (svc's own copy; gmail.modify
// cannot delete for good) and the write fails with ErrInvalidData.
//
// A restore whose path is a message id (the engine's original place) takes
// the message out of the trash and checks that it holds the content given.
func (p *Provider) Write(ctx context.Context, req providers.WriteRequest, body io.Reader) (providers.Object, error) {
	uid := user(req.SourceRef)
	if req.Mode == providers.WriteRestore && messageIDPath.MatchString(req.Path) {
		return p.restoreByID(ctx, uid, req, body)
	}
	if req.SizeBytes > MaxImportBytes {
		return providers.Object{}, fail("write", req.Path, fmt.Errorf("%d bytes, Gmail imports at most %d: %w", req.SizeBytes, MaxImportBytes, providers.ErrTooLarge))
	}
	raw, err := io.ReadAll(io.LimitReader(body, MaxImportBytes+1))
	if err != nil {
		return providers.Object{}, fail("write", req.Path, fmt.Errorf("read content: %w", err))
	}
	if len(raw) > MaxImportBytes {
		return providers.Object{}, fail("write", req.Path, fmt.Errorf("more than %d bytes, Gmail's most: %w", MaxImportBytes, providers.ErrTooLarge))
	}
	sum := sha256.Sum256(raw)
	switch {
	case req.SizeBytes >= 0 && int64(len(raw)) != req.SizeBytes:
		return providers.Object{}, fail("write", req.Path, fmt.Errorf("%d bytes, expected %d: %w", len(raw), req.SizeBytes, providers.ErrInvalidData))
	case req.SHA256 != "" && hex.EncodeToString(sum[:]) != req.SHA256:
		return providers.Object{}, fail("write", req.Path, fmt.Errorf("content does not match its sha256: %w", providers.ErrInvalidData))
	case len(raw) == 0:
		return providers.Object{}, fail("write", req.Path, fmt.Errorf("an empty message: %w", providers.ErrInvalidArgument))
	}
	labels, err := p.targetLabels(ctx, uid, req.Path)
	if err != nil {
		return providers.Object{}, fail("write", req.Path, err)
	}
	msgID := messageID(raw)
	var before []string // copies there before the first send
	if msgID != "" {
		// Two writes of one message at once (a plan's duplicates) would each find none and
		// import it twice: the second waits, then finds the first's.
		defer p.writing.Lock(msgID)()
		if before, err = p.findByMessageID(ctx, uid, msgID); err != nil {
			return providers.Object{}, fail("write", req.Path, err)
		}
		if len(before) > 0 && !req.Overwrite {
			return p.existing(ctx, uid, req.Path, before, labels, raw)
		}
	}
	id, err := p.importMessage(ctx, uid, raw, labels, msgID, before)
	if err != nil {
		return providers.Object{}, err
	}
	o, err := p.readBack(ctx, uid, id, raw)
	if errors.Is(err, providers.ErrInvalidData) {
		// svc's own new copy: nothing else refers to it.
		_, _ = p.svc.Users.Messages.Trash(uid, id).Context(context.WithoutCancel(ctx)).Do()
	}
	if err != nil {
		return providers.Object{}, fail("write", id, err)
	}
	return o, nil
}

// existing is Write of a message already in the mailbox: the copy with
// the same bytes, given the target labels it lacks.
func (p *Provider) existing(ctx context.Context, uid, path string, ids, labels []string, raw []byte) (providers.Object, error) {
	for _, id := range ids {
		o, err := p.readBack(ctx, uid, id, raw)
		if errors.Is(err, providers.ErrInvalidData) {
			continue // another message under the same Message-ID
		}
		if err != nil {
			return providers.Object{}, fail("write", id, err)
		}
		have := strings.Split(o.Metadata["gmail.label_ids"], ",")
		var missing []string
		for _, l := range labels {
			if !slices.Contains(have, l) {
				missing = append(missing, l)
			}
		}
		if len(missing) == 0 {
			return o, nil
		}
		if _, err := p.svc.Users.Messages.Modify(uid, id, &gm.ModifyMessageRequest{AddLabelIds: missing}).Context(ctx).Do(); err != nil {
			return providers.Object{}, fail("write", id, err)
		}
		if o, err = p.readBack(ctx, uid, id, raw); err != nil {
			return providers.Object{}, fail("write", id, err)
		}
		return o, nil
	}
	return providers.Object{}, fail("write", path, fmt.Errorf("another message with this Message-ID is in the mailbox: %w", providers.ErrAlreadyExists))
}

// importMessage sends the message to messages.import and returns its new
// id. See Write for when it sends again.
func (p *Provider) importMessage(ctx context.Context, uid string, raw []byte, labels []string, msgID string, before []string) (string, error) {
	for attempt := 1; ; attempt++ {
		// A *bytes.Reader and no chunking: one multipart/related request the
		// client can replay after a 401 (token refresh) or a 429.
		m, err := p.svc.Users.Messages.Import(uid, &gm.Message{LabelIds: labels}).
			InternalDateSource("dateHeader").NeverMarkSpam(true).ProcessForCalendar(false).
			Media(bytes.NewReader(raw), googleapi.ContentType("message/rfc822"), googleapi.ChunkSize(0)).
			Fields("id").Context(google.Once(ctx)).Do()
		if err == nil {
			return m.Id, nil
		}
		err = fail("write", "", err)
		if !errors.Is(err, providers.ErrTransient) || ctx.Err() != nil {
			return "", err
		}
		// A 5xx or a dropped connection: Gmail may have stored it.
		if msgID == "" {
			return "", &providers.Error{Op: "write", Provider: providers.VendorAMail, Err: fmt.Errorf(
				"the import failed (%v) and may have stored the message, which has no Message-ID to look it up by: not sent again", errors.Unwrap(err))}
		}
		// Gmail's search may take a moment to see a new message.
		if err := sleep(ctx, time.Duration(250<<attempt)*time.Millisecond+rand.N(100*time.Millisecond)); err != nil {
			return "", err
		}
		ids, lerr := p.findByMessageID(ctx, uid, msgID)
		if lerr != nil {
			// Unknown either way; the next Write looks it up before sending.
			return "", err
		}
		for _, id := range ids {
			if !slices.Contains(before, id) {
				return id, nil
			}
		}
		if attempt == importAttempts {
			return "", err
		}
	}
}

// readBack reads a stored message (format=raw) and checks that it is raw.
func (p *Provider) readBack(ctx context.Context, uid, id string, raw []byte) (providers.Object, error) {
	m, err := p.svc.Users.Messages.Get(uid, id).Format("raw").Context(ctx).Do()
	if err != nil {
		return providers.Object{}, err
	}
	got, err := decodeRaw(m.Raw)
	if err != nil {
		return providers.Object{}, err
	}
	if !bytes.Equal(got, raw) {
		return providers.Object{}, fmt.Errorf("the stored message (%d bytes) differs from what was sent (%d bytes): %w", len(got), len(raw), providers.ErrInvalidData)
	}
	names, err := p.labelNames(ctx, uid)
	if err != nil {
		return providers.Object{}, err
	}
	return fetched(m, got, names), nil
}

// findByMessageID returns the ids of the messages, spam included and
// trashed ones left out, whose Message-ID header is msgID.
func (p *Provider) findByMessageID(ctx context.Context, uid, msgID string) ([]string, error) {
	res, err := p.svc.Users.Messages.List(uid).Q("rfc822msgid:" + msgID).IncludeSpamTrash(true).MaxResults(10).Context(ctx).Do()
	if err != nil {
		return nil, err
	}
	if len(res.Messages) == 0 {
		return nil, nil
	}
	ids := make([]string, len(res.Messages))
	for i, m := range res.Messages {
		ids[i] = m.Id
	}
	got, err := p.metadata(ctx, uid, ids)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, g := range got {
		switch {
		case g.err != nil && errors.Is(g.err, providers.ErrNotFound):
		case g.err != nil:
			return nil, g.err
		case !slices.Contains(g.msg.LabelIds, "TRASH"):
			out = append(out, ids[i])
		}
	}
	return out, nil
}

// messageID returns a message's Message-ID without its angle brackets, or
// "" when it has none fit for a Gmail search (a search term ends at a
// space or quote).
func messageID(raw []byte) string {
	h, err := textproto.NewReader(bufio.NewReader(bytes.NewReader(raw))).ReadMIMEHeader()
	if err != nil && len(h) == 0 {
		return ""
	}
	id := strings.Trim(strings.TrimSpace(h.Get("Message-Id")), "<>")
	if id == "" || strings.ContainsFunc(id, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune(`"()<>`, r)
	}) {
		return ""
	}
	return id
}

// targetLabels maps a write's path to label ids, creating a user label
// that does not exist. A path that names a label (a system label, or a user
// label that exists) is that label. Any other path is a destination's, as a
// path template renders it ("From Outlook/Inbox/Minutes.eml"): its last
// segment is the message's name and the rest the label, created when
// missing; a name alone is the inbox.
func (p *Provider) targetLabels(ctx context.Context, uid, path string) ([]string, error) {
	name := strings.Trim(path, "/")
	if strings.ContainsFunc(name, unicode.IsControl) {
		return nil, fmt.Errorf("label %q: %w", path, providers.ErrInvalidArgument)
	}
	if id, ok, err := p.namedLabel(ctx, uid, name); ok || err != nil {
		return []string{id}, err
	}
	dir, _, ok := cutLast(name, "/")
	if !ok {
		return []string{"INBOX"}, nil
	}
	if id, ok, err := p.namedLabel(ctx, uid, dir); ok || err != nil {
		return []string{id}, err
	}
	id, err := p.userLabel(ctx, uid, dir)
	if err != nil {
		return nil, err
	}
	return []string{id}, nil
}

// namedLabel returns the label a write into name goes to when name is
// "" (INBOX), a system label's id (any case) or an existing user label's
// name; TRASH and DRAFT are refused.
func (p *Provider) namedLabel(ctx context.Context, uid, name string) (string, bool, error) {
	if name == "" {
		return "INBOX", true, nil
	}
	for _, l := range systemLabels {
		if strings.EqualFold(l, name) {
			return l, true, nil
		}
	}
	if strings.EqualFold(name, "TRASH") || strings.EqualFold(name, "DRAFT") {
		return "", false, fmt.Errorf("label %s: a message is not written into it: %w", name, providers.ErrInvalidArgument)
	}
	names, err := p.labelNames(ctx, uid)
	if err != nil {
		return "", false, err
	}
	if id := findLabel(names, name); id != "" {
		return id, true, nil
	}
	return "", false, nil
}

// cutLast slices s around the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// userLabel returns the id of the user label named name (Gmail's label
// names are unique regardless of case), creating it and its parents
// ("Archive" for "Archive/2024") when missing.
func (p *Provider) userLabel(ctx context.Context, uid, name string) (string, error) {
	segs := strings.Split(name, "/")
	var id string
	for i := range segs {
		n := strings.Join(segs[:i+1], "/")
		if strings.TrimSpace(segs[i]) == "" {
			return "", fmt.Errorf("label %q: an empty level: %w", name, providers.ErrInvalidArgument)
		}
		var err error
		if id, err = p.labelID(ctx, uid, n); err != nil {
			return "", err
		}
	}
	return id, nil
}

// labelID returns the id of the user label named name, creating it when
// missing.
func (p *Provider) labelID(ctx context.Context, uid, name string) (string, error) {
	for fresh := false; ; fresh = true {
		names, err := p.labelNames(ctx, uid)
		if err != nil {
			return "", err
		}
		if id := findLabel(names, name); id != "" {
			return id, nil
		}
		if fresh {
			return "", fmt.Errorf("label %q: Gmail refused to create it and it is not there", name)
		}
		l, err := p.svc.Users.Labels.Create(uid, &gm.Label{Name: name, LabelListVisibility: "labelShow", MessageListVisibility: "show"}).Context(ctx).Do()
		var ge *googleapi.Error
		switch {
		case err == nil:
			p.learnLabel(l.Id, l.Name)
			return l.Id, nil
		case errors.As(err, &ge) && ge.Code == 409:
			// Made meanwhile by someone else: read the labels again.
			p.mu.Lock()
			p.labels = nil
			p.mu.Unlock()
		default:
			return "", fmt.Errorf("create label %q: %w", name, err)
		}
	}
}

// findLabel returns the id of the label named name, an exact match first.
func findLabel(names map[string]string, name string) string {
	var fold string
	for id, n := range names {
		if n == name {
			return id
		}
		if strings.EqualFold(n, name) {
			fold = id
		}
	}
	return fold
}

// learnLabel adds a created label to the cached names. The map is
// replaced, not changed: callers read the one they got without the lock.
func (p *Provider) learnLabel(id, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.labels == nil {
		return // read again on next use
	}
	l := maps.Clone(p.labels)
	l[id] = name
	p.labels = l
}

// restoreByID is Write of a restore to a message's original place: the
// message is taken out of the trash (if it is there) and must hold the
// content given. A message deleted for good is ErrNotFound: restore it to
// a destination (a label), which imports it again.
func (p *Provider) restoreByID(ctx context.Context, uid string, req providers.WriteRequest, body io.Reader) (providers.Object, error) {
	h := sha256.New()
	n, err := io.Copy(h, body)
	if err != nil {
		return providers.Object{}, fail("write", req.Path, fmt.Errorf("read content: %w", err))
	}
	digest := hex.EncodeToString(h.Sum(nil))
	if (req.SizeBytes >= 0 && n != req.SizeBytes) || (req.SHA256 != "" && digest != req.SHA256) {
		return providers.Object{}, fail("write", req.Path, fmt.Errorf("content does not match its size or sha256: %w", providers.ErrInvalidData))
	}
	id := req.Path
	m, err := p.svc.Users.Messages.Get(uid, id).Format("minimal").Context(ctx).Do()
	if err == nil && slices.Contains(m.LabelIds, "TRASH") {
		_, err = p.svc.Users.Messages.Untrash(uid, id).Context(ctx).Do()
	}
	if err != nil {
		err = fail("write", id, err)
		if errors.Is(err, providers.ErrNotFound) {
			return providers.Object{}, fmt.Errorf("%w (deleted for good: restore it to a destination)", err)
		}
		return providers.Object{}, err
	}
	c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: req.SourceRef, ObjectID: id})
	if err != nil {
		return providers.Object{}, err
	}
	_ = c.Body.Close()
	if c.Object.SizeBytes != n || c.Object.SHA256 != digest {
		return providers.Object{}, fail("write", id, fmt.Errorf("the message at its original place is not the content to restore: %w", providers.ErrAlreadyExists))
	}
	return c.Object, nil
}
