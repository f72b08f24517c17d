package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/server"
	"svc.dev/svc/vault"
)

// corruptVaultFiles flips a byte in the middle of every stored file of the vault (content
// files and packs), as a failing disk would.
func corruptVaultFiles(t *testing.T, dataDir string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(filepath.Join(dataDir, "vault"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(filepath.Dir(path)) == "tmp" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil || len(b) < 200 {
			return nil
		}
		b[len(b)/2] ^= 0xff
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		n++
		return nil
	})
	return n
}

// The scrub job finds content that no longer matches, marks it corrupt (the API says so),
// records a job and emits events.
func TestScrubJobMarksCorruptContent(t *testing.T) {
	var dataDir string
	e, _, src, _ := localEnv(t, 4, func(c *server.Config) { dataDir = c.DataDir })
	runLocal(t, e, src)
	tenant := e.userTestTenant()

	clean := e.srv.ScrubVault(context.Background(), tenant, nil)
	if clean.Err != nil || clean.Report.Objects == 0 || clean.Report.Verified != clean.Report.Objects || len(clean.Report.Corrupt) != 0 {
		t.Fatalf("scrub of intact content: %+v, %v", clean.Report, clean.Err)
	}
	if n := corruptVaultFiles(t, dataDir); n == 0 {
		t.Fatal("nothing to corrupt")
	}
	res := e.srv.ScrubVault(context.Background(), tenant, &vault.ScrubOptions{NoRepair: true})
	if res.Err != nil || len(res.Report.Corrupt) == 0 {
		t.Fatalf("scrub of corrupted content: %+v, %v", res.Report, res.Err)
	}
	if res.Job.GetKind() != svcv1.JobKind_JOB_KIND_SCAN || res.Job.GetStatus() != svcv1.JobStatus_JOB_STATUS_SUCCEEDED ||
		len(res.Job.GetResult().GetFields()["corrupt"].GetListValue().GetValues()) != len(res.Report.Corrupt) {
		t.Fatalf("job: %v", res.Job)
	}
	cx := "?connection_id=" + e.creds.ConnectionID
	vid := res.Report.Corrupt[0]
	if o := e.do("GET", "/v1/vault/objects/"+vid+cx, "", e.key()...).json(t); o["state"] != "corrupt" {
		t.Fatalf("vault object after the scrub: %v", o)
	}
	er := e.do("GET", "/v1/events?types=svc.vault.object.corrupt,svc.job.succeeded", "", e.key()...)
	evs, _ := er.json(t)["data"].([]any)
	if er.status != 200 {
		t.Fatalf("events: %d %s", er.status, er.body)
	}
	var subjects []string
	for _, ev := range evs {
		subjects = append(subjects, ev.(map[string]any)["subject"].(string))
	}
	if !slices.Contains(subjects, vid) || !slices.Contains(subjects, res.Job.GetId()) {
		t.Fatalf("events %v lack the corrupt object %s or the job %s", subjects, vid, res.Job.GetId())
	}
}

// Objects committed longer ago than ColdAfter move to the cold tier; their content still reads
// back verified.
func TestTieringMovesOldObjectsCold(t *testing.T) {
	e, _, src, shas := localEnv(t, 3)
	runLocal(t, e, src)
	tenant := e.userTestTenant()
	if n, err := e.srv.TierVault(context.Background(), tenant, 90*24*time.Hour); err != nil || n != 0 {
		t.Fatalf("moved %d fresh objects (%v)", n, err)
	}
	e.clock.Advance(91 * 24 * time.Hour)
	n, err := e.srv.TierVault(context.Background(), tenant, 90*24*time.Hour)
	if err != nil || n != 3 {
		t.Fatalf("moved %d of 3 (%v)", n, err)
	}
	// The move was a migration job.
	var jobs struct {
		Data []map[string]any `json:"data"`
	}
	json.Unmarshal(e.do("GET", "/v1/jobs?kind=migration&connection_id="+e.creds.ConnectionID, "", e.key()...).body, &jobs)
	if len(jobs.Data) != 1 || jobs.Data[0]["status"] != "succeeded" || jobs.Data[0]["result"].(map[string]any)["objects_moved"] != float64(3) {
		t.Fatalf("migration jobs: %v", jobs.Data)
	}
	cx := "?connection_id=" + e.creds.ConnectionID
	var list struct {
		Data []map[string]any `json:"data"`
	}
	json.Unmarshal(e.do("GET", "/v1/vault/objects"+cx, "", e.key()...).body, &list)
	for _, o := range list.Data {
		if o["cold_since"] == nil {
			t.Fatalf("not cold: %v", o)
		}
		r := e.do("GET", "/v1/vault/objects/"+o["id"].(string)+"/content"+cx, "", e.key()...)
		sum := sha256.Sum256(r.body)
		if r.status != 200 || hex.EncodeToString(sum[:]) != shas[o["name"].(string)] {
			t.Fatalf("cold content of %s: %d", o["name"], r.status)
		}
	}
}
