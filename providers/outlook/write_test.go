package outlook_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	fake "svc.dev/svc/internal/vendorfake/graph"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/outlook"
	"svc.dev/svc/providers/providertest"
)

// mime returns a small message with that Message-ID ("" for none).
func mime(msgID, subject string) []byte {
	var b strings.Builder
	b.WriteString("From: \"Ana\" <ana@example.com>\r\nTo: bo@example.org\r\nSubject: " + subject + "\r\n")
	b.WriteString("Date: Tue, 03 Mar 2026 10:00:00 +0000\r\n")
	if msgID != "" {
		b.WriteString("Message-ID: " + msgID + "\r\n")
	}
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHello,\r\nthe minutes are attached.\r\n")
	return []byte(b.String())
}

func writeReq(path string, content []byte) providers.WriteRequest {
	sum := sha256.Sum256(content)
	return providers.WriteRequest{SourceRef: "default", Path: path, Kind: providers.KindMessage, MIMEType: "message/rfc822",
		SizeBytes: int64(len(content)), SHA256: hex.EncodeToString(sum[:]), Mode: providers.WriteCopy}
}

func openWriter(t *testing.T, s *fake.Server) (*outlook.Provider, providers.Writer) {
	t.Helper()
	p, err := outlook.Open(config(s), nil)
	if err != nil {
		t.Fatal(err)
	}
	w, ok := providers.AsWriter(p)
	if !ok {
		t.Fatal("vendor_b_mail does not write")
	}
	return p, w
}

func fetch(t *testing.T, p providers.Provider, o providers.Object) []byte {
	t.Helper()
	c, err := p.Fetch(context.Background(), providers.FetchRequest{SourceRef: "default", ObjectID: o.ID, ExpectedVersion: o.Version})
	if err != nil {
		t.Fatalf("fetch %s: %v", o.ID, err)
	}
	defer c.Body.Close()
	b, err := io.ReadAll(c.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWriteIntoFolders: a message written into Inbox, into an existing
// nested folder, into folders that do not exist yet (created, the last
// segment of a destination path taken as the message's name) and, with a
// path of one segment that is no folder, into Inbox, lands there as a
// draft, is listed there, and its content comes back byte for byte.
func TestWriteIntoFolders(t *testing.T) {
	s := fake.Seeded(fake.Seed{Seed: 6, Messages: 10, Files: 1})
	defer s.Close()
	ctx := context.Background()
	p, w := openWriter(t, s)
	cases := []struct{ path, folder string }{
		{"Inbox", "Inbox"},
		{"Inbox/Lists", "Inbox/Lists"},
		{"inbox/lists", "Inbox/Lists"}, // Exchange's folder names ignore case
		{"src_1/Mail/2024/m1.eml", "src_1/Mail/2024"},
		{"src_1/Mail/2024/m2.eml", "src_1/Mail/2024"},
		{"Archive/Old/x", "Archive/Old"},
		{"AAMkAGMessage000003AAA=.eml", "Inbox"},
	}
	for i, tc := range cases {
		content := mime(fmt.Sprintf("<write-%d@example.com>", i), "case "+tc.path)
		o, err := w.Write(ctx, writeReq(tc.path, content), bytes.NewReader(content))
		if err != nil {
			t.Fatalf("write to %q: %v", tc.path, err)
		}
		if err := providers.ValidateObject(o); err != nil {
			t.Errorf("written object: %v", err)
		}
		want := s.FolderPath(tc.folder)
		if want == "" || s.MessageFolder(o.ID) != want || o.Path != tc.folder || o.SizeBytes != int64(len(content)) {
			t.Errorf("write to %q: %+v in folder %q, want the folder %q (%s)", tc.path, o, s.MessageFolder(o.ID), tc.folder, want)
		}
		if !s.IsDraft(o.ID) {
			t.Errorf("write to %q: not filed as Graph files a MIME create (a draft)", tc.path)
		}
		if got := fetch(t, p, o); !bytes.Equal(got, content) {
			t.Errorf("write to %q: fetched %q, wrote %q", tc.path, got, content)
		}
	}
	if n := len(s.Messages(s.FolderPath("src_1/Mail/2024"))); n != 2 {
		t.Errorf("%d messages in the created folder, want 2", n)
	}
	objs, _ := providertest.ListAll(ctx, t, p, "default", 50)
	var paths []string
	for _, o := range objs {
		paths = append(paths, o.Path)
	}
	for _, f := range []string{"src_1/Mail/2024", "Archive/Old"} {
		if !slices.Contains(paths, f) {
			t.Errorf("nothing listed in the created folder %q", f)
		}
	}
	for _, bad := range []string{"", "/", "Inbox/../x", "Inbox//x", "a\x01b/x"} {
		content := mime("<bad@example.com>", "bad")
		if _, err := w.Write(ctx, writeReq(bad, content), bytes.NewReader(content)); !errors.Is(err, providers.ErrInvalidArgument) {
			t.Errorf("write to %q: %v, want ErrInvalidArgument", bad, err)
		}
	}
}

// TestWriteOnce: writing a message the folder already holds (by
// Message-ID) returns the one there; Overwrite stores the new copy and
// moves the old one to Deleted Items; a write whose content does not match
// its checksum stores nothing and creates no folder.
func TestWriteOnce(t *testing.T) {
	s := fake.Seeded(fake.Seed{Seed: 7, Messages: 5, Files: 1})
	defer s.Close()
	ctx := context.Background()
	_, w := openWriter(t, s)
	content := mime("<once@example.com>", "once")
	first, err := w.Write(ctx, writeReq("Inbox", content), bytes.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	n := s.MessageCount()
	again, err := w.Write(ctx, writeReq("Inbox", content), bytes.NewReader(content))
	if err != nil || again.ID != first.ID || s.MessageCount() != n {
		t.Errorf("second write: %+v, %v; %d messages, had %d", again, err, s.MessageCount(), n)
	}
	req := writeReq("Inbox", content)
	req.Overwrite = true
	replaced, err := w.Write(ctx, req, bytes.NewReader(content))
	if err != nil || replaced.ID == first.ID {
		t.Fatalf("overwrite: %+v, %v", replaced, err)
	}
	if s.MessageFolder(first.ID) != s.FolderID("deleteditems") || s.MessageFolder(replaced.ID) != s.FolderID("inbox") {
		t.Errorf("overwrite left the old copy in %q and the new in %q", s.MessageFolder(first.ID), s.MessageFolder(replaced.ID))
	}

	n = s.MessageCount()
	bad := writeReq("Fresh/x", content)
	bad.SHA256 = strings.Repeat("0", 64)
	if _, err := w.Write(ctx, bad, bytes.NewReader(content)); !errors.Is(err, providers.ErrInvalidData) {
		t.Errorf("write with a wrong sha256: %v, want ErrInvalidData", err)
	}
	if s.MessageCount() != n || s.FolderPath("Fresh") != "" {
		t.Errorf("a refused write stored something (%d messages, had %d; folder %q)", s.MessageCount(), n, s.FolderPath("Fresh"))
	}
}

// TestWriteLostAnswer: a POST Graph carried out but answered 503 is not
// sent again blindly: the folder is searched for the Message-ID first, so
// exactly one copy is stored. A 503 for a POST that was not carried out is
// sent again. A message without a Message-ID whose answer is lost is not
// sent again (it could be stored twice) and the error is not transient.
func TestWriteLostAnswer(t *testing.T) {
	s := fake.Seeded(fake.Seed{Seed: 8, Messages: 5, Files: 1})
	defer s.Close()
	ctx := context.Background()
	p, w := openWriter(t, s)
	inbox := s.FolderID("inbox")
	post := "/v1.0/me/mailFolders/" + inbox + "/messages"
	count := func(mid string) int {
		k := 0
		for _, id := range s.Messages("inbox") {
			c, err := p.Fetch(ctx, providers.FetchRequest{ObjectID: id})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(c.Body)
			c.Body.Close()
			if bytes.Contains(b, []byte("Message-ID: "+mid+"\r\n")) {
				k++
			}
		}
		return k
	}

	s.Inject(fake.Fault{Method: http.MethodPost, PathPrefix: post, Status: http.StatusServiceUnavailable, Times: 1, Performed: true})
	content := mime("<lost@example.com>", "lost answer")
	o, err := w.Write(ctx, writeReq("Inbox", content), bytes.NewReader(content))
	if err != nil {
		t.Fatalf("write whose answer was lost: %v", err)
	}
	if k := count("<lost@example.com>"); k != 1 || s.MessageFolder(o.ID) != inbox {
		t.Errorf("%d copies stored after a lost answer, want 1 (returned %s)", k, o.ID)
	}

	s.Inject(fake.Fault{Method: http.MethodPost, PathPrefix: post, Status: http.StatusServiceUnavailable, Times: 1})
	content = mime("<refused@example.com>", "refused once")
	if _, err := w.Write(ctx, writeReq("Inbox", content), bytes.NewReader(content)); err != nil {
		t.Fatalf("write refused once: %v", err)
	}
	if k := count("<refused@example.com>"); k != 1 {
		t.Errorf("%d copies stored after a refused POST, want 1", k)
	}

	s.Inject(fake.Fault{Method: http.MethodPost, PathPrefix: post, Status: http.StatusServiceUnavailable, Times: 1, Performed: true})
	n := s.MessageCount()
	content = mime("", "no message id")
	_, err = w.Write(ctx, writeReq("Inbox", content), bytes.NewReader(content))
	if err == nil || providers.IsRetryable(err) {
		t.Errorf("lost answer without a Message-ID: %v, want a failure that is not retried", err)
	}
	if s.MessageCount() != n+1 {
		t.Errorf("%d messages, want %d (stored once, not sent again)", s.MessageCount(), n+1)
	}
}

// TestWriteTooLarge: MIME over MaxMIMEBytes (Graph's 4 MB request, base64)
// is ErrTooLarge and nothing is stored.
func TestWriteTooLarge(t *testing.T) {
	s := fake.Seeded(fake.Seed{Seed: 9, Messages: 3, Files: 1})
	defer s.Close()
	_, w := openWriter(t, s)
	n := s.MessageCount()
	content := append(mime("<big@example.com>", "big"), bytes.Repeat([]byte("0123456789abcde\n"), outlook.MaxMIMEBytes/16)...)
	if _, err := w.Write(context.Background(), writeReq("Inbox", content), bytes.NewReader(content)); !errors.Is(err, providers.ErrTooLarge) {
		t.Errorf("write of %d bytes: %v, want ErrTooLarge", len(content), err)
	}
	if s.MessageCount() != n {
		t.Errorf("an oversize write stored something")
	}
	ok := content[:outlook.MaxMIMEBytes]
	if _, err := w.Write(context.Background(), writeReq("Inbox", ok), bytes.NewReader(ok)); err != nil {
		t.Errorf("write of exactly MaxMIMEBytes: %v", err)
	}
}

// TestWriteRestoresToTheOriginalFolder: a restore-mode write naming a
// trashed message by its id (as svc's engine names the original place)
// moves it back out of Deleted Items to the folder the trash's result
// names, not a second copy; without that result, to Inbox; a message
// already back is returned as it is; content that is not the message's is
// refused.
func TestWriteRestoresToTheOriginalFolder(t *testing.T) {
	s := fake.Seeded(fake.Seed{Seed: 10, Messages: 30, Files: 1})
	defer s.Close()
	ctx := context.Background()
	p, w := openWriter(t, s)
	objs, _ := providertest.ListAll(ctx, t, p, "default", 50)
	var nested []providers.Object
	for _, o := range objs {
		if o.Path == "Inbox/Lists" {
			nested = append(nested, o)
		}
	}
	if len(nested) < 2 {
		t.Fatalf("%d messages in Inbox/Lists", len(nested))
	}
	n := s.MessageCount()
	for i, o := range nested[:2] {
		content := fetch(t, p, o)
		res, err := p.Trash(ctx, providers.ActionRequest{ObjectID: o.ID, ExpectedVersion: o.Version})
		if err != nil {
			t.Fatal(err)
		}
		req := writeReq(o.ID, content)
		req.Mode = providers.WriteRestore
		want := s.FolderPath("Inbox/Lists")
		if i == 1 {
			want = s.FolderID("inbox")
		} else {
			req.Metadata = map[string]string{providers.MetaTrashResult: res.ResultID}
		}
		for range 2 { // the second finds it back
			back, err := w.Write(ctx, req, bytes.NewReader(content))
			if err != nil || back.ID != o.ID || s.MessageFolder(o.ID) != want {
				t.Errorf("restore %d of %s: %+v, %v; in %q, want %q", i, o.ID, back, err, s.MessageFolder(o.ID), want)
			}
		}
	}
	// Trashed again, from a folder that is then gone: back into Inbox.
	o := nested[0]
	o.Version = "" // moved since the listing
	content := fetch(t, p, o)
	if _, err := p.Trash(ctx, providers.ActionRequest{ObjectID: o.ID}); err != nil {
		t.Fatal(err)
	}
	req := writeReq(o.ID, content)
	req.Mode, req.Metadata = providers.WriteRestore, map[string]string{providers.MetaTrashResult: "AAMkAGFolderGoneAAA="}
	if back, err := w.Write(ctx, req, bytes.NewReader(content)); err != nil || s.MessageFolder(o.ID) != s.FolderID("inbox") {
		t.Errorf("restore to a folder that is gone: %+v, %v; in %q", back, err, s.MessageFolder(o.ID))
	}
	if s.MessageCount() != n {
		t.Errorf("restores made copies: %d messages, had %d", s.MessageCount(), n)
	}
	other := mime("<someone-else@example.com>", "not this one")
	req = writeReq(nested[0].ID, other)
	req.Mode = providers.WriteRestore
	if _, err := w.Write(ctx, req, bytes.NewReader(other)); !errors.Is(err, providers.ErrAlreadyExists) {
		t.Errorf("restore of other content onto a message's id: %v, want ErrAlreadyExists", err)
	}
}

// TestWriteRequests: once its folders exist, a write costs three requests
// (the lookup by Message-ID, the POST, reading the stored message back):
// the folder tree is not read again for every message of a migration.
func TestWriteRequests(t *testing.T) {
	s := fake.Seeded(fake.Seed{Seed: 11, Messages: 20, Files: 1})
	defer s.Close()
	ctx := context.Background()
	_, w := openWriter(t, s)
	for i := range 6 {
		content := mime(fmt.Sprintf("<migrated-%d@example.com>", i), "migrated")
		before := s.Requests()
		if _, err := w.Write(ctx, writeReq(fmt.Sprintf("src_2/Mail/%d.eml", i), content), bytes.NewReader(content)); err != nil {
			t.Fatal(err)
		}
		if n := s.Requests() - before; i > 0 && n > 3 {
			t.Errorf("write %d took %d requests, want 3", i, n)
		}
	}
}

// TestWriteFiledInDrafts: where Graph files a message created from MIME in
// Drafts whatever folder the request named (a third-party report says
// Exchange Online does), the write moves it into its folder, and a lost
// answer is found there without a second copy.
func TestWriteFiledInDrafts(t *testing.T) {
	s := fake.Seeded(fake.Seed{Seed: 12, Messages: 5, Files: 1})
	defer s.Close()
	ctx := context.Background()
	_, w := openWriter(t, s)
	s.CreatesInto("drafts")
	drafts := len(s.Messages("drafts"))
	content := mime("<drafted@example.com>", "drafted")
	o, err := w.Write(ctx, writeReq("Inbox/Lists", content), bytes.NewReader(content))
	if err != nil || s.MessageFolder(o.ID) != s.FolderPath("Inbox/Lists") || o.Path != "Inbox/Lists" {
		t.Fatalf("write: %+v, %v; in %q", o, err, s.MessageFolder(o.ID))
	}
	s.Inject(fake.Fault{Method: http.MethodPost, PathPrefix: "/v1.0/me/mailFolders/" + s.FolderID("inbox") + "/messages", Status: http.StatusBadGateway, Times: 1, Performed: true})
	n := s.MessageCount()
	content = mime("<drafted-lost@example.com>", "drafted, answer lost")
	o, err = w.Write(ctx, writeReq("Inbox", content), bytes.NewReader(content))
	if err != nil || s.MessageFolder(o.ID) != s.FolderID("inbox") || s.MessageCount() != n+1 {
		t.Errorf("write with a lost answer: %+v, %v; in %q; %d messages, had %d", o, err, s.MessageFolder(o.ID), s.MessageCount(), n)
	}
	if len(s.Messages("drafts")) != drafts {
		t.Errorf("a written message was left in Drafts")
	}
}

// TestWriteOnceConcurrently: writes of one message at once (a plan's duplicates, run by the
// engine's workers side by side) leave one message, which each of them returns.
func TestWriteOnceConcurrently(t *testing.T) {
	s := fake.Seeded(fake.Seed{Seed: 7, Messages: 2, Files: 1})
	defer s.Close()
	_, w := openWriter(t, s)
	content := mime("<twins@example.com>", "twins")
	n := s.MessageCount()
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			o, err := w.Write(context.Background(), writeReq("Inbox", content), bytes.NewReader(content))
			if err != nil {
				t.Error(err)
			}
			ids[i] = o.ID
		})
	}
	wg.Wait()
	if s.MessageCount() != n+1 {
		t.Fatalf("%d messages stored, want 1", s.MessageCount()-n)
	}
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("the writes returned %v, want one message", ids)
		}
	}
}
