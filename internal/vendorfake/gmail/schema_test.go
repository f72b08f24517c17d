package gmail_test

import (
	"context"
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
	for _, schema := range served.Missing([]string{"Profile", "ListLabelsResponse", "ListMessagesResponse", "Message", "ListHistoryResponse"}) {
		t.Errorf("no %s was served: the test does not cover it", schema)
	}
	t.Logf("checked %v", served)
}
