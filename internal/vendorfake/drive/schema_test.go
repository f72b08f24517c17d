package drive_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"svc.dev/svc/internal/vendorfake"
	fake "svc.dev/svc/internal/vendorfake/drive"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/gdrive"
	"svc.dev/svc/providers/providertest"
)

// TestShapesMatchDiscovery drives every route of the fake through the
// vendor_a_files provider and checks each JSON body it served against the
// Drive API's discovery document that google.golang.org/api ships.
func TestShapesMatchDiscovery(t *testing.T) {
	doc, err := vendorfake.LoadDiscovery("drive/v3/drive-api.json")
	if err != nil {
		t.Fatal(err)
	}
	s := fake.New(t, fake.Options{Files: 30, Seed: 9, SharedFiles: 4})
	served := vendorfake.CheckServed(t, s.Base, doc)
	p, err := gdrive.New(context.Background(), providers.Config(s.Config()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cfg := providers.Config(s.Config())
	cfg["upload_chunk_bytes"] = "262144"
	wp, err := gdrive.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	objs, m := providertest.ListAll(ctx, t, p, "root", 7)
	s.Add("new.txt", "text/plain", "root", []byte("new"))
	s.Delete(objs[1].ID)
	res, err := p.(providers.Trasher).Trash(ctx, providers.ActionRequest{SourceRef: "root", ObjectID: objs[2].ID, ExpectedVersion: objs[2].Version})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.(providers.Untrasher).Untrash(ctx, providers.UntrashRequest{SourceRef: "root", ObjectID: objs[2].ID, ResultID: res.ResultID}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Changes(ctx, providers.ChangesRequest{SourceRef: "root", Since: m, PageSize: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.(providers.Quotaer).Quota(ctx, "root"); err != nil {
		t.Fatal(err)
	}
	// Writes: a folder created, a multipart upload, a resumable session
	// in chunks, an overwrite (files.update with media).
	small, big := bytes.Repeat([]byte("a"), 1000), bytes.Repeat([]byte("b"), 3*fake.ChunkGranularity+7)
	w := wp.(providers.Writer)
	for _, c := range []struct {
		path string
		data []byte
		over bool
	}{{"written/small.txt", small, false}, {"written/big.bin", big, false}, {"written/small.txt", big, true}} {
		if _, err := w.Write(ctx, providers.WriteRequest{SourceRef: "root", Path: c.path, SizeBytes: -1, Mode: providers.WriteCopy, Overwrite: c.over}, bytes.NewReader(c.data)); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Uploads(); st.Multipart != 1 || st.Resumable != 2 {
		t.Errorf("uploads %+v: the test does not cover both upload types", st)
	}
	// A shared drive: its listing (files with driveId), root folder, changes
	// and a write into it.
	sharedRef := "drive:" + fake.SharedDriveID
	_, sm := providertest.ListAll(ctx, t, p, sharedRef, 2)
	if _, err := w.Write(ctx, providers.WriteRequest{SourceRef: sharedRef, Path: "Specs/written.txt", SizeBytes: -1, Mode: providers.WriteCopy}, bytes.NewReader(small)); err != nil {
		t.Fatal(err)
	}
	if pg, err := p.Changes(ctx, providers.ChangesRequest{SourceRef: sharedRef, Since: sm}); err != nil || len(pg.Changes) != 1 {
		t.Fatalf("shared drive changes: %+v, %v", pg, err)
	}
	for _, schema := range served.Missing([]string{"About", "FileList", "File", "StartPageToken", "ChangeList"}) {
		t.Errorf("no %s was served: the test does not cover it", schema)
	}
	t.Logf("checked %v", served)
}

// TestErrorBodies: the Drive fake's errors, the new endpoints' included,
// are Google's JSON error bodies with Drive's reasons.
func TestErrorBodies(t *testing.T) {
	s := fake.New(t, fake.Options{Files: 3, SharedFiles: 2})
	doc := s.DocIDs(fake.DocType)[0]
	cases := []struct {
		method, path string
		status       int
		reason       string
	}{
		{"GET", "/drive/v3/files/nope", 404, "notFound"},
		{"GET", "/drive/v3/files/" + doc + "?alt=media", 403, "fileNotDownloadable"},
		{"GET", "/drive/v3/files/" + doc + "/export?mimeType=video/mp4", 400, "badRequest"},
		{"GET", "/drive/v3/files?corpora=drive", 400, "invalid"},
		{"GET", "/drive/v3/files?corpora=drive&driveId=" + fake.SharedDriveID, 403, "teamDrivesParameterNotSupported"},
		{"GET", "/drive/v3/files?corpora=drive&driveId=0ANope&supportsAllDrives=true&includeItemsFromAllDrives=true", 404, "notFound"},
		{"GET", "/drive/v3/files/" + fake.SharedDriveID, 404, "notFound"},
		{"PUT", "/upload/drive/v3/files?uploadType=resumable&upload_id=gone", 404, "notFound"},
		{"POST", "/upload/drive/v3/files?uploadType=bogus", 400, "invalid"},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, s.URL()+c.path, nil)
		req.Header.Set("Authorization", "Bearer "+vendorfake.AccessToken)
		req.Header.Set("Content-Range", "bytes */0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(b), `"reason":"`+c.reason+`"`) {
			t.Errorf("%s %s: %d %s, want %d %s", c.method, c.path, resp.StatusCode, b, c.status, c.reason)
		}
		for _, p := range vendorfake.CheckGoogleError(resp.StatusCode, b) {
			t.Errorf("%s %s: %s", c.method, c.path, p)
		}
	}
}
