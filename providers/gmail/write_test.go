package gmail_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	fake "svc.dev/svc/internal/vendorfake/gmail"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/gmail"
)

// message is an RFC 5322 message with the given Message-ID ("" for none).
func message(msgID, subject string) []byte {
	var b bytes.Buffer
	b.WriteString("From: Ada <ada@example.com>\r\nTo: sam.rivera@example.com\r\n")
	b.WriteString("Date: Tue, 03 Mar 2026 09:15:00 +0000\r\nSubject: " + subject + "\r\n")
	if msgID != "" {
		b.WriteString("Message-ID: <" + msgID + ">\r\n")
	}
	b.WriteString("Content-Type: text/plain; charset=utf-8\r\n\r\nThe minutes of the meeting.\r\n")
	return b.Bytes()
}

func writeReq(raw []byte, path string) providers.WriteRequest {
	sum := sha256.Sum256(raw)
	return providers.WriteRequest{SourceRef: "me", Path: path, Kind: providers.KindMessage, MIMEType: "message/rfc822",
		SizeBytes: int64(len(raw)), SHA256: hex.EncodeToString(sum[:]), Mode: providers.WriteCopy}
}

func write(t *testing.T, p providers.Provider, req providers.WriteRequest, raw []byte) providers.Object {
	t.Helper()
	o, err := p.(providers.Writer).Write(context.Background(), req, bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("write into %q: %v", req.Path, err)
	}
	return o
}

// copies counts the messages of the mailbox whose raw bytes are raw.
func copies(s *fake.Server, raw []byte) int {
	n := 0
	for _, id := range s.IDs() {
		if bytes.Equal(s.Raw(id), raw) {
			n++
		}
	}
	return n
}

// TestWriteRoundTrip: a message written into INBOX, into an existing user
// label and into a new nested one comes back byte for byte, in that label.
func TestWriteRoundTrip(t *testing.T) {
	s := fake.New(t, fake.Options{Messages: 5, Seed: 2})
	p := open(t, s, nil)
	ctx := context.Background()
	for i, tc := range []struct {
		path, container string
	}{
		{"INBOX", "INBOX"},
		{"", "INBOX"},
		{"spam", "SPAM"},
		{"Receipts/Minutes.eml", "Receipts"},
		{"Receipts", "Receipts"}, // exists now: the label itself
		{"Imported/2026/Minutes.eml", "Imported/2026"},
		{"Family", "Family"},
		{"Minutes.eml", "INBOX"}, // a name alone
	} {
		subject := fmt.Sprintf("Minutes %d", i)
		raw := message(fmt.Sprintf("rt-%d@example.com", i), subject)
		o := write(t, p, writeReq(raw, tc.path), raw)
		if !slices.Contains(o.Containers, tc.container) {
			t.Errorf("written into %q: containers %v, want %s", tc.path, o.Containers, tc.container)
		}
		if o.Message == nil || o.Message.Subject != subject || o.CreatedAt.Year() != 2026 || o.CreatedAt.Month() != 3 {
			t.Errorf("written object %+v: want the message's subject and its Date header as its date", o)
		}
		c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: "me", ObjectID: o.ID, ExpectedVersion: o.Version})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(c.Body)
		c.Body.Close()
		if !bytes.Equal(got, raw) || c.Object.SHA256 != o.SHA256 {
			t.Errorf("fetched %q differs from what was written", got)
		}
	}
	labels := s.UserLabels()
	var names []string
	for _, n := range labels {
		names = append(names, n)
	}
	slices.Sort(names)
	if want := []string{"Family", "Imported", "Imported/2026", "Receipts"}; !slices.Equal(names, want) {
		t.Errorf("user labels %v, want %v (the new label and its parent created, no other)", names, want)
	}
	if s.Imports() != 8 {
		t.Errorf("%d imports, want 8", s.Imports())
	}
	if _, err := p.(providers.Writer).Write(ctx, writeReq(message("x@example.com", "x"), "TRASH"), bytes.NewReader(message("x@example.com", "x"))); !errors.Is(err, providers.ErrInvalidArgument) {
		t.Errorf("write into TRASH: %v, want ErrInvalidArgument", err)
	}
}

// TestWriteAfterFailure: an import that Gmail stored but answered with a
// 503 or a dropped connection is found by its Message-ID, not sent again:
// one copy. Without a Message-ID it is not sent again either, and the
// error does not invite a retry.
func TestWriteAfterFailure(t *testing.T) {
	for _, status := range []int{503, 0} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			s := fake.New(t, fake.Options{Messages: 3, Seed: 4})
			p := open(t, s, nil)
			raw := message(fmt.Sprintf("fail-%d@example.com", status), "Once")
			s.FailAfterImport(status)
			o := write(t, p, writeReq(raw, "INBOX"), raw)
			if n := copies(s, raw); n != 1 || s.Imports() != 1 {
				t.Errorf("%d copies after %d imports, want 1 and 1", n, s.Imports())
			}
			if !bytes.Equal(s.Raw(o.ID), raw) {
				t.Errorf("returned %s, which is not the message", o.ID)
			}
			// Written again (the engine retrying a step): the copy is returned.
			if again := write(t, p, writeReq(raw, "INBOX"), raw); again.ID != o.ID || s.Imports() != 1 {
				t.Errorf("a second write returned %s after %d imports, want %s and 1", again.ID, s.Imports(), o.ID)
			}
		})
	}
	t.Run("no Message-ID", func(t *testing.T) {
		s := fake.New(t, fake.Options{Messages: 3, Seed: 4})
		p := open(t, s, nil)
		raw := message("", "No id")
		s.FailAfterImport(503)
		_, err := p.(providers.Writer).Write(context.Background(), writeReq(raw, "INBOX"), bytes.NewReader(raw))
		if err == nil || providers.IsRetryable(err) {
			t.Errorf("got %v, want a failure that is not retryable", err)
		}
		if s.Imports() != 1 {
			t.Errorf("%d imports, want 1", s.Imports())
		}
	})
}

// TestWriteExisting: a message already in the mailbox is returned (and
// given the target label) without a new import, unless Overwrite; another
// message under the same Message-ID is ErrAlreadyExists.
func TestWriteExisting(t *testing.T) {
	s := fake.New(t, fake.Options{Messages: 3, Seed: 4})
	p := open(t, s, nil)
	raw := message("dup@example.com", "Twice")
	first := write(t, p, writeReq(raw, "INBOX"), raw)
	second := write(t, p, writeReq(raw, "Family"), raw)
	if second.ID != first.ID || s.Imports() != 1 {
		t.Fatalf("second write %s after %d imports, want %s and 1", second.ID, s.Imports(), first.ID)
	}
	if !slices.Contains(second.Containers, "Family") || !slices.Contains(second.Containers, "INBOX") {
		t.Errorf("containers %v, want INBOX and Family", second.Containers)
	}
	req := writeReq(raw, "INBOX")
	req.Overwrite = true
	if third := write(t, p, req, raw); third.ID == first.ID || copies(s, raw) != 2 {
		t.Errorf("with Overwrite: %s, %d copies; want a new copy", third.ID, copies(s, raw))
	}
	other := message("dup@example.com", "Same id, other message")
	if _, err := p.(providers.Writer).Write(context.Background(), writeReq(other, "INBOX"), bytes.NewReader(other)); !errors.Is(err, providers.ErrAlreadyExists) {
		t.Errorf("another message under the same Message-ID: %v, want ErrAlreadyExists", err)
	}
}

// TestWriteTooLarge: a message over Gmail's import limit is ErrTooLarge
// and nothing is sent, whether its size is declared or found by reading.
func TestWriteTooLarge(t *testing.T) {
	s := fake.New(t, fake.Options{Messages: 3, Seed: 4})
	p := open(t, s, nil)
	big := append(message("big@example.com", "Big"), bytes.Repeat([]byte("0123456789abcde\n"), gmail.MaxImportBytes/16)...)
	declared := writeReq(big, "INBOX")
	undeclared := declared
	undeclared.SizeBytes, undeclared.SHA256 = -1, ""
	for _, req := range []providers.WriteRequest{declared, undeclared} {
		before := len(s.Log())
		_, err := p.(providers.Writer).Write(context.Background(), req, bytes.NewReader(big))
		if !errors.Is(err, providers.ErrTooLarge) {
			t.Errorf("size %d: %v, want ErrTooLarge", req.SizeBytes, err)
		}
		if n := len(s.Log()) - before; n != 0 {
			t.Errorf("size %d: %d requests sent, want none", req.SizeBytes, n)
		}
	}
	if s.Imports() != 0 {
		t.Errorf("%d imports", s.Imports())
	}
}

// TestWriteRestoreInPlace: a restore whose path is the message's id takes
// it out of the trash when its content is the vault's.
func TestWriteRestoreInPlace(t *testing.T) {
	s := fake.New(t, fake.Options{Messages: 3, Seed: 4})
	p := open(t, s, nil)
	ctx := context.Background()
	id := s.IDs()[1]
	raw := s.Raw(id)
	if _, err := p.(providers.Trasher).Trash(ctx, providers.ActionRequest{SourceRef: "me", ObjectID: id}); err != nil {
		t.Fatal(err)
	}
	req := writeReq(raw, id)
	req.Mode = providers.WriteRestore
	o := write(t, p, req, raw)
	if o.ID != id || slices.Contains(s.Labels(id), "TRASH") || s.Imports() != 0 {
		t.Errorf("restored %s, labels %v, %d imports: want %s out of the trash, nothing imported", o.ID, s.Labels(id), s.Imports(), id)
	}
	other := []byte(strings.Replace(string(raw), "Subject:", "Subject: changed", 1))
	req = writeReq(other, id)
	req.Mode = providers.WriteRestore
	if _, err := p.(providers.Writer).Write(ctx, req, bytes.NewReader(other)); !errors.Is(err, providers.ErrAlreadyExists) {
		t.Errorf("another content at the original place: %v, want ErrAlreadyExists", err)
	}
}

// TestWriteLabelMadeMeanwhile: a label another client created after the
// provider read the labels is used, not created again (Gmail answers the
// create 409).
func TestWriteLabelMadeMeanwhile(t *testing.T) {
	s := fake.New(t, fake.Options{Messages: 3, Seed: 4})
	p := open(t, s, nil)
	raw := message("a@example.com", "A")
	write(t, p, writeReq(raw, "Receipts"), raw) // reads the labels
	id := s.AddLabel("Later")
	raw = message("b@example.com", "B")
	o := write(t, p, writeReq(raw, "later/B.eml"), raw)
	if !slices.Contains(o.Containers, "Later") || !slices.Contains(s.Labels(o.ID), id) || len(s.UserLabels()) != 3 {
		t.Errorf("containers %v, labels %v, user labels %v: want the existing label Later", o.Containers, s.Labels(o.ID), s.UserLabels())
	}
}
