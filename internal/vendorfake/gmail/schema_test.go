package gmail_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"svc.dev/svc/internal/vendorfake"
	fake "svc.dev/svc/internal/vendorfake/gmail"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/gmail"
	"svc.dev/svc/providers/providertest"
)

// TestShapesMatchDiscovery drives every route of the fake through the
// vendor_a_mail provider and checks each JSON body it served against the
// Gmail API's discovery document that google.golang.org/api ships.
func TestShapesMatchDiscovery(t *testing.T) {
	doc, err := vendorfake.LoadDiscovery("gmail/v1/gmail-api.json")
	if err != nil {
		t.Fatal(err)
	}
	s := fake.New(t, fake.Options{Messages: 30, Seed: 9})
	served := vendorfake.CheckServed(t, s.Base, doc)
	p, err := gmail.New(context.Background(), providers.Config(s.Config()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	objs, m := providertest.ListAll(ctx, t, p, "me", 7)
	s.Insert([]byte("From: a@example.com\r\nSubject: hi\r\n\r\nhello\r\n"), "INBOX", "UNREAD")
	s.Relabel(objs[0].ID, []string{"STARRED"}, []string{"UNREAD"})
	s.Delete(objs[1].ID)
	res, err := p.(providers.Trasher).Trash(ctx, providers.ActionRequest{SourceRef: "me", ObjectID: objs[2].ID, ExpectedVersion: objs[2].Version})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.(providers.Untrasher).Untrash(ctx, providers.UntrashRequest{SourceRef: "me", ObjectID: objs[2].ID, ResultID: res.ResultID}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Changes(ctx, providers.ChangesRequest{SourceRef: "me", Since: m, PageSize: 2}); err != nil {
		t.Fatal(err)
	}
	c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: "me", ObjectID: objs[3].ID, ExpectedVersion: objs[3].Version})
	if err != nil {
		t.Fatal(err)
	}
	c.Body.Close()
	err = p.(providers.BatchFetcher).FetchBatch(ctx, []providers.FetchRequest{{SourceRef: "me", ObjectID: objs[4].ID}}, func(int, providers.FetchOutcome) {})
	if err != nil {
		t.Fatal(err)
	}
	// Write: the import route on the upload path (multipart/related), the
	// rfc822msgid: search, a new user label, and a message already there
	// given another label (messages.modify).
	raw := []byte("From: a@example.com\r\nMessage-ID: <schema@example.com>\r\nSubject: hi\r\n\r\nhello\r\n")
	w := p.(providers.Writer)
	for _, label := range []string{"Imported/hi.eml", "INBOX"} {
		if _, err := w.Write(ctx, providers.WriteRequest{SourceRef: "me", Path: label, SizeBytes: int64(len(raw)), Mode: providers.WriteCopy}, bytes.NewReader(raw)); err != nil {
			t.Fatal(err)
		}
	}
	if s.Imports() != 1 {
		t.Errorf("%d imports, want 1", s.Imports())
	}
	for _, schema := range served.Missing([]string{"Profile", "ListLabelsResponse", "ListMessagesResponse", "Message", "ListHistoryResponse", "Label"}) {
		t.Errorf("no %s was served: the test does not cover it", schema)
	}
	t.Logf("checked %v", served)
}

// TestErrorBodies: the Gmail fake's errors are Google's JSON error bodies
// (vendorfake.CheckGoogleError), with the HTTP status as their code.
func TestErrorBodies(t *testing.T) {
	s := fake.New(t, fake.Options{Messages: 3, HistoryKept: 1})
	s.Insert([]byte("From: a@example.com\r\n\r\nx\r\n"))
	s.Insert([]byte("From: b@example.com\r\n\r\ny\r\n")) // the first history record is dropped
	cases := []struct {
		method, path, token string
		status              int
	}{
		{"GET", "/gmail/v1/users/me/messages/nope", vendorfake.AccessToken, 404},
		{"GET", "/gmail/v1/users/me/messages?maxResults=0", vendorfake.AccessToken, 400},
		{"GET", "/gmail/v1/users/me/history?startHistoryId=1", vendorfake.AccessToken, 404},
		{"GET", "/gmail/v1/users/someone@example.com/profile", vendorfake.AccessToken, 403},
		{"GET", "/gmail/v1/users/me/profile", "not-a-token", 401},
		{"POST", "/batch/gmail/v1", vendorfake.AccessToken, 400},
		{"POST", "/upload/gmail/v1/users/me/messages/import?uploadType=resumable", vendorfake.AccessToken, 400},
		{"POST", "/upload/gmail/v1/users/me/messages/import?uploadType=multipart", vendorfake.AccessToken, 400},
		{"POST", "/upload/gmail/v1/users/me/messages/nope?uploadType=multipart", vendorfake.AccessToken, 404},
		{"POST", "/gmail/v1/users/me/labels", vendorfake.AccessToken, 400},
		{"GET", "/gmail/v1/users/me/messages?q=from:someone", vendorfake.AccessToken, 400},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, s.URL()+c.path, nil)
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, resp.StatusCode, b, c.status)
		}
		for _, p := range vendorfake.CheckGoogleError(resp.StatusCode, b) {
			t.Errorf("%s %s: %s", c.method, c.path, p)
		}
	}
}
