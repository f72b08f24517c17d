package server_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"svc.dev/svc/internal/spamdtest"
	"svc.dev/svc/plan/spamc"
	"svc.dev/svc/providers"
	"svc.dev/svc/server"
)

// A server configured with a spam filter (svc serve --spamd) asks it when it plans: a
// stranger's message spamd calls spam is removable with spamd's verdict in its reason, over
// POST /v1/plans.
func TestPlansAskTheConfiguredJunkFilter(t *testing.T) {
	addr := spamdtest.Start(t)
	e := newEnv(t, func(c *server.Config) { c.JunkFilter = &spamc.Client{Addr: addr} })
	root := t.TempDir()
	for _, sub := range []string{"cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(root, "INBOX", sub), 0o755)
	}
	raw := "From: Carol <carol@far.example>\r\nTo: me@home.example\r\nSubject: hello\r\nMessage-ID: <3@far.example>\r\n" +
		"Date: Tue, 03 Nov 2026 11:00:00 +0000\r\n\r\nXJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X\r\n"
	if err := os.WriteFile(filepath.Join(root, "INBOX", "cur", "1.gtube:2,S"), []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := e.srv.ConnectSource(context.Background(), e.userTestTenant(), server.SourceSpec{Provider: providers.VendorDLocal,
		Config: providers.Config{"root": root}, Kind: "mail", DisplayName: "Mail"})
	if err != nil {
		t.Fatal(err)
	}
	r := e.do("POST", "/v1/plans?connection_id="+e.creds.ConnectionID, `{"intent":"svc","source_ids":["`+src.Id+`"]}`, e.key()...)
	if r.status != 201 {
		t.Fatalf("plan: %d %s", r.status, r.body)
	}
	var p struct {
		Objects []struct {
			StorageClass       string `json:"storageClass"`
			StorageClassReason string `json:"storageClassReason"`
		} `json:"objects"`
	}
	json.Unmarshal(r.body, &p)
	if len(p.Objects) != 1 || p.Objects[0].StorageClass != "likely_removable" ||
		!strings.HasPrefix(p.Objects[0].StorageClassReason, "junk: a spam filter marked it (spamd: ") {
		t.Errorf("plan objects: %+v", p.Objects)
	}
}
