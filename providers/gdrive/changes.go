package gdrive

import (
	"context"
	"errors"
	"fmt"
	"time"

	dr "google.golang.org/api/drive/v3"
	"google.golang.org/api/googleapi"

	"svc.dev/svc/providers"
)

// files starts a files.list over My Drive (drive "") or a shared drive.
func (p *Provider) files(drive string) *dr.FilesListCall {
	call := p.svc.Files.List().SupportsAllDrives(true)
	if drive == "" {
		return call.Spaces("drive").Corpora("user")
	}
	return call.Corpora("drive").DriveId(drive).IncludeItemsFromAllDrives(true)
}

// Changes lists the files changed since a page_token marker, each as it
// is now (trashed or deleted ones as deletions).
func (p *Provider) Changes(ctx context.Context, req providers.ChangesRequest) (providers.ChangePage, error) {
	drive, err := driveOf(req.SourceRef)
	if err != nil {
		return providers.ChangePage{}, err
	}
	if req.Since.Kind != providers.MarkerPageToken || req.Since.Value == "" {
		return providers.ChangePage{}, fmt.Errorf("vendor_a_files: marker kind %q: %w", req.Since.Kind, providers.ErrInvalidArgument)
	}
	page := req.Since.Value
	if req.PageToken != "" {
		t, err := decodeToken(changesKind, req.PageToken)
		if err != nil {
			return providers.ChangePage{}, err
		}
		page = t.Page
	}
	call := p.svc.Changes.List(page).IncludeRemoved(true).Spaces("drive").SupportsAllDrives(true)
	if drive != "" {
		call = call.DriveId(drive).IncludeItemsFromAllDrives(true)
	}
	res, err := call.PageSize(int64(providers.ClampPageSize(req.PageSize))).
		Fields(googleapi.Field("nextPageToken,newStartPageToken,changes(fileId,removed,time,file(" + fileFields + "))")).Context(ctx).Do()
	if err != nil {
		err = fail("changes", "", err)
		if errors.Is(err, providers.ErrNotFound) {
			return providers.ChangePage{}, fmt.Errorf("vendor_a_files: %w: %v", providers.ErrMarkerExpired, err)
		}
		return providers.ChangePage{}, err
	}
	var out providers.ChangePage
	for _, c := range res.Changes {
		switch {
		case c.Removed || c.File == nil || c.File.Trashed:
			out.Changes = append(out.Changes, providers.Change{Type: providers.ChangeDelete, ObjectID: c.FileId})
		case !p.listed(c.File):
			if c.File.MimeType == folderType {
				p.mu.Lock()
				delete(p.folders, c.FileId) // renamed or moved, perhaps
				p.mu.Unlock()
			}
		default:
			o, err := p.object(ctx, c.File)
			if errors.Is(err, providers.ErrTooLarge) || errors.Is(err, providers.ErrUnsupported) {
				// A document Drive will no longer export: gone from the listing.
				out.Changes = append(out.Changes, providers.Change{Type: providers.ChangeDelete, ObjectID: c.FileId})
				continue
			}
			if err != nil {
				return providers.ChangePage{}, fail("changes", c.FileId, err)
			}
			out.Changes = append(out.Changes, providers.Change{Type: providers.ChangeUpsert, ObjectID: o.ID, Object: &o})
		}
	}
	if res.NextPageToken != "" {
		if out.NextPageToken, err = encodeToken(changesKind, token{Marker: req.Since.Value, Page: res.NextPageToken}); err != nil {
			return providers.ChangePage{}, fail("changes", "", err)
		}
	} else {
		out.Marker = providers.Marker{Kind: providers.MarkerPageToken, Value: res.NewStartPageToken}
	}
	return out, nil
}

// Quota reports the account's storage: Drive, Gmail and Photos share it.
// A shared drive's storage is its organization's pool, which the Drive API
// does not report per drive: its use is measured by summing its files'
// quotaBytesUsed (trashed ones as TrashBytes), with no known limit.
func (p *Provider) Quota(ctx context.Context, sourceRef string) (providers.Quota, error) {
	drive, err := driveOf(sourceRef)
	if err != nil {
		return providers.Quota{}, err
	}
	if drive != "" {
		return p.sharedQuota(ctx, drive)
	}
	a, err := p.svc.About.Get().Fields("storageQuota").Context(ctx).Do()
	if err != nil {
		return providers.Quota{}, fail("quota", "", err)
	}
	q := a.StorageQuota
	if q == nil {
		return providers.Quota{}, fail("quota", "", fmt.Errorf("no storageQuota: %w", providers.ErrTransient))
	}
	return providers.Quota{UsedBytes: q.Usage, LimitBytes: q.Limit, TrashBytes: q.UsageInDriveTrash, ObservedAt: time.Now().UTC(),
		Breakdown: map[string]int64{"drive": q.UsageInDrive, "other": max(q.Usage-q.UsageInDrive, 0)}}, nil
}

// sharedQuota measures a shared drive's use from its files.
func (p *Provider) sharedQuota(ctx context.Context, drive string) (providers.Quota, error) {
	q := providers.Quota{}
	call := p.files(drive).Q("mimeType != '" + folderType + "'").PageSize(providers.MaxPageSize).
		Fields("nextPageToken,files(quotaBytesUsed,trashed)").Context(ctx)
	err := call.Pages(ctx, func(l *dr.FileList) error {
		for _, f := range l.Files {
			q.UsedBytes += f.QuotaBytesUsed
			if f.Trashed {
				q.TrashBytes += f.QuotaBytesUsed
			}
		}
		return nil
	})
	if err != nil {
		return providers.Quota{}, fail("quota", "", err)
	}
	q.ObservedAt = time.Now().UTC()
	return q, nil
}
