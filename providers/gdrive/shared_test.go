package gdrive_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	fake "svc.dev/svc/internal/vendorfake/drive"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/providertest"
)

const shared = "drive:" + fake.SharedDriveID

func TestConformanceSharedDrive(t *testing.T) {
	providertest.Run(t, providertest.Harness{
		Open: func(t testing.TB) (providers.Provider, string) {
			return open(t, fake.New(t, fake.Options{Files: 3, SharedFiles: 8, Seed: 2})), shared
		},
		MinObjects: 8,
	})
}

// TestSharedDrive: a shared drive is its own source: its files (paths from
// the drive's root, organizer as owner) apart from My Drive's, its own
// change log, writes into it, and its use measured from its files (no
// limit: a shared drive's storage is its organization's pool).
func TestSharedDrive(t *testing.T) {
	s := fake.New(t, fake.Options{Files: 4, SharedFiles: 6, Seed: 5})
	p := open(t, s)
	ctx := context.Background()
	mine, myMarker := providertest.ListAll(ctx, t, p, "root", 0)
	team, teamMarker := providertest.ListAll(ctx, t, p, shared, 4)
	if len(team) != 6 || len(mine) != 6 { // My Drive: 4 files and 2 Docs editors files
		t.Fatalf("listed %d in the shared drive (want 6), %d in My Drive (want 6)", len(team), len(mine))
	}
	var nested int
	for _, o := range team {
		if o.Metadata["drive.drive_id"] != fake.SharedDriveID || !slices.ContainsFunc(o.Permissions, func(x providers.Permission) bool { return x.Role == providers.RoleOwner }) {
			t.Errorf("shared drive file %+v", o)
		}
		if len(o.Containers) == 1 && o.Containers[0] == "Specs" && o.Path == "Specs/"+o.Name {
			nested++
		} else if len(o.Containers) != 0 || o.Path != o.Name {
			t.Errorf("path of %+v", o)
		}
	}
	if nested != 3 {
		t.Errorf("%d files in Specs, want 3", nested)
	}
	data := []byte("written into the shared drive")
	o, err := p.(providers.Writer).Write(ctx, providers.WriteRequest{SourceRef: shared, Path: "Specs/new.txt", SizeBytes: int64(len(data)), Mode: providers.WriteCopy}, bytes.NewReader(data))
	if err != nil || o.Path != "Specs/new.txt" || o.Metadata["drive.drive_id"] != fake.SharedDriveID {
		t.Fatalf("write into the shared drive: %+v, %v", o, err)
	}
	pg, err := p.Changes(ctx, providers.ChangesRequest{SourceRef: shared, Since: teamMarker})
	if err != nil || len(pg.Changes) != 1 || pg.Changes[0].ObjectID != o.ID {
		t.Fatalf("shared drive changes: %+v, %v", pg, err)
	}
	if pg, err := p.Changes(ctx, providers.ChangesRequest{SourceRef: "root", Since: myMarker}); err != nil || len(pg.Changes) != 0 {
		t.Fatalf("My Drive changes after a write into the shared drive: %+v, %v", pg, err)
	}
	want := int64(len(data))
	for _, o := range team {
		want += o.SizeBytes
	}
	if _, err := p.(providers.Trasher).Trash(ctx, providers.ActionRequest{SourceRef: shared, ObjectID: team[0].ID, ExpectedVersion: team[0].Version}); err != nil {
		t.Fatal(err)
	}
	if q, err := p.(providers.Quotaer).Quota(ctx, shared); err != nil || q.UsedBytes != want || q.TrashBytes != team[0].SizeBytes || q.LimitBytes != 0 {
		t.Errorf("shared drive quota: %+v, %v; want %d bytes used, %d in the trash, no limit", q, err, want, team[0].SizeBytes)
	}
	if _, err := p.List(ctx, providers.ListRequest{SourceRef: "drive:0ANoSuchDrive"}); !errors.Is(err, providers.ErrNotFound) {
		t.Errorf("an unknown shared drive: %v, want ErrNotFound", err)
	}
}
