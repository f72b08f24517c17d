package local_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/internal/fixtures"
	"svc.dev/svc/providers/local"
	"svc.dev/svc/providers/providertest"
)

func setup(t testing.TB) (providers.Provider, string, string, int) {
	t.Helper()
	root, trash := t.TempDir(), t.TempDir()
	n, err := fixtures.LocalTree(filepath.Join(root, "home"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := local.New(context.Background(), providers.Config{"root": root, "trash_dir": trash})
	if err != nil {
		t.Fatal(err)
	}
	return p, root, trash, n
}

func TestConformance(t *testing.T) {
	var n int
	_, _, _, n = setup(t)
	providertest.Run(t, providertest.Harness{
		Open: func(t testing.TB) (providers.Provider, string) {
			p, _, _, _ := setup(t)
			return p, "home"
		},
		MinObjects:  n,
		FetchSample: 20,
	})
}

func TestListing(t *testing.T) {
	ctx := context.Background()
	p, _, _, n := setup(t)
	objs, _ := providertest.ListAll(ctx, t, p, "home", 1)
	if len(objs) != n {
		t.Fatalf("listed %d objects, want %d: %v", len(objs), n, objs)
	}
	byID := map[string]providers.Object{}
	var order []string
	for _, o := range objs {
		byID[o.ID] = o
		order = append(order, o.ID)
	}
	want := []string{"Archive/old.mbox#0", "Documents/2023/budget.csv", "Mail/Inbox/1700000001.M1P1.host", "a/inner.txt", "a.b", "notes.txt"}
	for _, id := range want {
		if _, ok := byID[id]; !ok {
			t.Errorf("missing %q in %v", id, order)
		}
	}
	if slices.Index(order, "a/inner.txt") > slices.Index(order, "a.b") {
		t.Errorf("walk order: a/inner.txt should come before a.b: %v", order)
	}
	digest := byID["Mail/Inbox/1700000001.M1P1.host"]
	if digest.Kind != providers.KindMessage || digest.Message == nil || digest.Message.From != "news@letters.example" ||
		!digest.Message.ListUnsubscribePost || digest.Message.ListID != "<weekly.letters.example>" {
		t.Errorf("maildir message headers: %+v", digest.Message)
	}
	if !byID["Mail/Inbox/1700000003.M3P1.host"].Starred {
		t.Error("F flag did not make the message starred")
	}
	if byID["Photos/beach.jpg"].Kind != providers.KindPhoto || byID["Videos/clip.mp4"].Kind != providers.KindVideo {
		t.Error("kinds by extension")
	}
	var mbox []providers.Object
	for _, o := range objs {
		if strings.HasPrefix(o.ID, "Archive/old.mbox#") {
			mbox = append(mbox, o)
		}
	}
	if len(mbox) != 3 || mbox[2].Message.Subject != "Your payout is on its way" || mbox[1].SHA256 == "" {
		t.Fatalf("mbox messages: %+v", mbox)
	}
}

func TestFileTrashFollowsFreedesktopSpec(t *testing.T) {
	ctx := context.Background()
	p, root, trash, _ := setup(t)
	objs, _ := providertest.ListAll(ctx, t, p, "home", 0)
	var o providers.Object
	for _, x := range objs {
		if x.ID == "Documents/report.pdf" {
			o = x
		}
	}
	res, err := p.(providers.Trasher).Trash(ctx, providers.ActionRequest{SourceRef: "home", ObjectID: o.ID, ExpectedVersion: o.Version})
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.ReadFile(filepath.Join(trash, "info", "report.pdf.trashinfo"))
	if err != nil {
		t.Fatal(err)
	}
	want := "[Trash Info]\nPath=" + filepath.Join(root, "home", "Documents", "report.pdf") + "\nDeletionDate="
	if !strings.HasPrefix(string(info), want) {
		t.Errorf("trashinfo:\n%s\nwant prefix:\n%s", info, want)
	}
	if _, err := os.Stat(filepath.Join(trash, "files", "report.pdf")); err != nil {
		t.Errorf("trashed file not in files/: %v", err)
	}
	if res.ResultID != filepath.Join(trash, "info", "report.pdf.trashinfo") {
		t.Errorf("result id %q", res.ResultID)
	}
	// A second file of the same name gets a distinct trash name.
	if err := os.WriteFile(filepath.Join(root, "home", "Documents", "report.pdf"), []byte("again"), 0o644); err != nil {
		t.Fatal(err)
	}
	res2, err := p.(providers.Trasher).Trash(ctx, providers.ActionRequest{SourceRef: "home", ObjectID: o.ID})
	if err != nil {
		t.Fatal(err)
	}
	if res2.ResultID == res.ResultID {
		t.Fatal("two trashed files share a trash name")
	}
	back, err := p.(providers.Untrasher).Untrash(ctx, providers.UntrashRequest{SourceRef: "home", ObjectID: o.ID, ResultID: res.ResultID})
	if err != nil {
		t.Fatal(err)
	}
	if back.SizeBytes != o.SizeBytes {
		t.Errorf("restored %d bytes, want %d", back.SizeBytes, o.SizeBytes)
	}
	// Restoring the second over the first must not clobber it.
	if _, err := p.(providers.Untrasher).Untrash(ctx, providers.UntrashRequest{SourceRef: "home", ObjectID: o.ID, ResultID: res2.ResultID}); !errors.Is(err, providers.ErrAlreadyExists) {
		t.Errorf("untrash over an existing file: %v", err)
	}
}

func TestMaildirTrashUsesTFlag(t *testing.T) {
	ctx := context.Background()
	p, root, _, _ := setup(t)
	id := "Mail/Inbox/1700000002.M2P1.host"
	res, err := p.(providers.Trasher).Trash(ctx, providers.ActionRequest{SourceRef: "home", ObjectID: id})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "home", "Mail/Inbox/cur/1700000002.M2P1.host:2,ST")); err != nil {
		t.Fatalf("T flag not set: %v", err)
	}
	if _, err := p.(providers.Untrasher).Untrash(ctx, providers.UntrashRequest{SourceRef: "home", ObjectID: id, ResultID: res.ResultID}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "home", "Mail/Inbox/cur/1700000002.M2P1.host:2,S")); err != nil {
		t.Fatalf("T flag not cleared: %v", err)
	}
}

func TestMboxMessagesAreReadOnly(t *testing.T) {
	ctx := context.Background()
	p, _, _, _ := setup(t)
	if _, err := p.(providers.Trasher).Trash(ctx, providers.ActionRequest{SourceRef: "home", ObjectID: "Archive/old.mbox#0"}); !errors.Is(err, providers.ErrUnsupported) {
		t.Errorf("trash in mbox: %v", err)
	}
	c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: "home", ObjectID: "Archive/old.mbox#0"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c.Body)
	c.Body.Close()
	if !strings.HasPrefix(string(b), "From: alice@friends.example") || strings.Contains(string(b), "From billing") {
		t.Errorf("mbox message content:\n%s", b)
	}
}

func TestSourceEscape(t *testing.T) {
	p, _, _, _ := setup(t)
	for _, ref := range []string{"../x", "/etc", "home/../.."} {
		if _, err := p.List(context.Background(), providers.ListRequest{SourceRef: ref}); err == nil {
			t.Errorf("source %q accepted", ref)
		}
	}
	if _, err := p.Fetch(context.Background(), providers.FetchRequest{SourceRef: "home", ObjectID: "../../etc/passwd"}); !errors.Is(err, providers.ErrNotFound) {
		t.Errorf("escaping id: %v", err)
	}
}

// TestFetchedMessageHeaders: a fetch parses only the header block, so a fetched message carries
// the listing's headers and header facts but none of the body's signals; a Maildir message
// larger than a batch carries is streamed by Fetch with its headers, and deferred by FetchBatch.
func TestFetchedMessageHeaders(t *testing.T) {
	ctx := context.Background()
	p, root, _, _ := setup(t)
	big := "From: Big Sender <big@example.org>\r\nSubject: a large message\r\nList-Id: <big.example.org>\r\n" +
		"Content-Type: text/plain\r\n\r\n" + strings.Repeat("all work and no play\r\n", providers.MaxInlineBytes/20)
	if err := os.WriteFile(filepath.Join(root, "home", "Mail", "Inbox", "cur", "1800000000.M9P9.host:2,S"), []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	objs, _ := providertest.ListAll(ctx, t, p, "home", 0)
	bodyFacts := []string{"mail.attachments", "mail.text_tail"}
	messages := 0
	for _, o := range objs {
		if o.Kind != providers.KindMessage {
			continue
		}
		messages++
		c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: "home", ObjectID: o.ID, ExpectedVersion: o.Version})
		if err != nil {
			t.Fatalf("fetch %q: %v", o.ID, err)
		}
		body, err := io.ReadAll(c.Body)
		c.Body.Close()
		if err != nil || int64(len(body)) != o.SizeBytes {
			t.Fatalf("fetch %q: %d bytes, %v; listed %d", o.ID, len(body), err, o.SizeBytes)
		}
		got, want := *c.Object.Message, *o.Message
		if got.Snippet != "" {
			t.Errorf("fetch %q: snippet %q: the body was read", o.ID, got.Snippet)
		}
		want.Snippet = ""
		if !reflectEqual(got, want) {
			t.Errorf("fetch %q: headers %+v, listed %+v", o.ID, got, want)
		}
		for k, v := range c.Object.Metadata {
			switch {
			case slices.Contains(bodyFacts, k):
				t.Errorf("fetch %q: body fact %s=%q", o.ID, k, v)
			case k == "mail.problems": // the header's problems, without the body's
			case o.Metadata[k] != v:
				t.Errorf("fetch %q: metadata %s=%q, listed %q", o.ID, k, v, o.Metadata[k])
			}
		}
		if c.Object.Version != o.Version || c.Object.SizeBytes != o.SizeBytes || c.Object.Name != o.Name || !c.Object.CreatedAt.Equal(o.CreatedAt) {
			t.Errorf("fetch %q: %+v, listed %+v", o.ID, c.Object, o)
		}
	}
	if messages < 3 {
		t.Fatalf("%d messages listed, want Maildir and mbox ones", messages)
	}
	b := p.(providers.BatchFetcher)
	var out providers.FetchOutcome
	if err := b.FetchBatch(ctx, []providers.FetchRequest{{SourceRef: "home", ObjectID: "Mail/Inbox/1800000000.M9P9.host"}}, func(_ int, o providers.FetchOutcome) { out = o }); err != nil {
		t.Fatal(err)
	}
	if !out.Deferred || out.Err != nil || out.Content != nil {
		t.Errorf("a message over MaxInlineBytes in a batch: %+v, want deferred", out)
	}
}

func reflectEqual(a, b providers.MessageHeaders) bool {
	return a.From == b.From && slices.Equal(a.To, b.To) && slices.Equal(a.Cc, b.Cc) && a.Subject == b.Subject && a.Date.Equal(b.Date) &&
		a.ThreadID == b.ThreadID && a.ListID == b.ListID && a.ListUnsubscribe == b.ListUnsubscribe && a.ListUnsubscribePost == b.ListUnsubscribePost
}

// TestFetchFollowsAMessageAnotherClientRenamed: a fetch takes a message this process saw at its
// remembered file without checking it first; when another client has renamed the file since (its
// flags changed) the fetch finds it again, and once it is flagged trashed there it is gone.
func TestFetchFollowsAMessageAnotherClientRenamed(t *testing.T) {
	ctx := context.Background()
	p, root, _, _ := setup(t)
	cur := filepath.Join(root, "home", "Mail", "Inbox", "cur")
	if err := os.WriteFile(filepath.Join(cur, "1900000000.M1P1.host:2,"), []byte("Subject: moving\r\n\r\nbody"), 0o600); err != nil {
		t.Fatal(err)
	}
	id := "Mail/Inbox/1900000000.M1P1.host"
	fetch := func() (string, error) {
		c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: "home", ObjectID: id})
		if err != nil {
			return "", err
		}
		defer c.Body.Close()
		b, err := io.ReadAll(c.Body)
		return c.Object.Name + "|" + string(b) + "|" + c.Object.Metadata["maildir_flags"], err
	}
	if got, err := fetch(); err != nil || got != "moving|Subject: moving\r\n\r\nbody|" {
		t.Fatalf("first fetch: %q, %v", got, err)
	}
	if err := os.Rename(filepath.Join(cur, "1900000000.M1P1.host:2,"), filepath.Join(cur, "1900000000.M1P1.host:2,S")); err != nil {
		t.Fatal(err)
	}
	if got, err := fetch(); err != nil || got != "moving|Subject: moving\r\n\r\nbody|S" {
		t.Fatalf("fetch after another client flagged it seen: %q, %v", got, err)
	}
	if err := os.Rename(filepath.Join(cur, "1900000000.M1P1.host:2,S"), filepath.Join(cur, "1900000000.M1P1.host:2,ST")); err != nil {
		t.Fatal(err)
	}
	if _, err := fetch(); !errors.Is(err, providers.ErrNotFound) {
		t.Fatalf("fetch after another client trashed it: %v, want ErrNotFound", err)
	}
}

// TestChangesRecognisesTheListedMarker: Changes computes the snapshot without reading the
// messages, and must still agree with the listing's marker, and expire when a Maildir message
// or an mbox message changes.
func TestChangesRecognisesTheListedMarker(t *testing.T) {
	ctx := context.Background()
	p, root, _, _ := setup(t)
	marker := func() providers.Marker {
		_, m := providertest.ListAll(ctx, t, p, "home", 0)
		return m
	}
	m := marker()
	if _, err := p.Changes(ctx, providers.ChangesRequest{SourceRef: "home", Since: m}); err != nil {
		t.Fatalf("changes since the listed marker: %v", err)
	}
	msgs, _ := filepath.Glob(filepath.Join(root, "home", "Mail", "Inbox", "cur", "*"))
	if len(msgs) == 0 {
		t.Fatal("no Maildir message in the fixture")
	}
	if err := os.WriteFile(msgs[0], []byte("Subject: edited\r\n\r\nnew body, longer than before"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Changes(ctx, providers.ChangesRequest{SourceRef: "home", Since: m}); !errors.Is(err, providers.ErrMarkerExpired) {
		t.Fatalf("changes after a message was edited: %v, want ErrMarkerExpired", err)
	}
	m = marker()
	if _, err := p.Changes(ctx, providers.ChangesRequest{SourceRef: "home", Since: m}); err != nil {
		t.Fatalf("changes since the new marker: %v", err)
	}
	mbox := filepath.Join(root, "home", "Archive", "old.mbox")
	b, err := os.ReadFile(mbox)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mbox, bytes.Replace(b, []byte("Subject: "), []byte("Subject: X"), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Changes(ctx, providers.ChangesRequest{SourceRef: "home", Since: m}); !errors.Is(err, providers.ErrMarkerExpired) {
		t.Fatalf("changes after an mbox message was edited: %v, want ErrMarkerExpired", err)
	}
}
