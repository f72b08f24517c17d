package gdrive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	dr "google.golang.org/api/drive/v3"
	"google.golang.org/api/googleapi"

	"svc.dev/svc/providers"
)

// Export is how a Google Docs editors file is fetched: the format Drive
// exports it to and the extension its name gets.
type Export struct {
	MIMEType, Ext string
}

// Exports are the formats svc exports Google Docs editors files to (Drive's
// documented export formats for each type): Office Open XML for documents,
// spreadsheets and presentations, SVG for drawings. Other Google types
// (forms, sites, maps, shortcuts, Apps Script) have no export svc takes and
// are not listed. docs/providers.md says what each export loses.
var Exports = map[string]Export{
	"application/vnd.google-apps.document":     {"application/vnd.openxmlformats-officedocument.wordprocessingml.document", ".docx"},
	"application/vnd.google-apps.spreadsheet":  {"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", ".xlsx"},
	"application/vnd.google-apps.presentation": {"application/vnd.openxmlformats-officedocument.presentationml.presentation", ".pptx"},
	"application/vnd.google-apps.drawing":      {"image/svg+xml", ".svg"},
}

// MaxExport is the most content Drive's files.export returns (10 MB);
// a larger document fails with exportSizeLimitExceeded.
const MaxExport = 10 << 20

// exportOf returns the export of a Google Docs editors file, if svc
// exports its type.
func exportOf(f *dr.File) (Export, bool) {
	e, ok := Exports[f.MimeType]
	return e, ok
}

// exportSizes remembers the size of an export by file id and version, so a
// listing and the changes after it do not export a document twice.
type exportSizes struct {
	mu sync.Mutex
	m  map[string]int64
}

func (c *exportSizes) get(key string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.m[key]
	return n, ok
}

func (c *exportSizes) put(key string, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) > 100000 {
		c.m = map[string]int64{}
	}
	c.m[key] = n
}

// export reads a document's export whole (Drive bounds it at 10 MB).
func (p *Provider) export(ctx context.Context, f *dr.File, e Export) ([]byte, error) {
	resp, err := p.svc.Files.Export(f.Id, e.MIMEType).Context(ctx).Download()
	if err != nil {
		return nil, refusal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxExport+1))
	if err != nil {
		return nil, fmt.Errorf("read export: %w: %w", err, providers.ErrTransient)
	}
	if len(b) > MaxExport {
		return nil, fmt.Errorf("export over %d bytes: %w", MaxExport, providers.ErrTooLarge)
	}
	p.sizes.put(f.Id+"@"+strconv.FormatInt(f.Version, 10), int64(len(b)))
	return b, nil
}

// exportSize returns the size of a document's export at its version,
// exporting it when it is not known.
func (p *Provider) exportSize(ctx context.Context, f *dr.File, e Export) (int64, error) {
	if n, ok := p.sizes.get(f.Id + "@" + strconv.FormatInt(f.Version, 10)); ok {
		return n, nil
	}
	b, err := p.export(ctx, f, e)
	return int64(len(b)), err
}

// exported maps a document to the object svc sees: its export's format,
// size and name (with the format's extension).
func exported(o *providers.Object, f *dr.File, e Export, size int64) {
	o.MIMEType, o.SizeBytes, o.SHA256 = e.MIMEType, size, ""
	if !strings.HasSuffix(strings.ToLower(o.Name), e.Ext) {
		o.Name += e.Ext
		o.Path += e.Ext
	}
	o.Metadata["drive.native_mime"] = f.MimeType
	o.Metadata["drive.export_mime"] = e.MIMEType
}

// fetchExport is Fetch of a Google Docs editors file: its export, whole.
func (p *Provider) fetchExport(ctx context.Context, f *dr.File, e Export, maxBytes int64) (*providers.Content, error) {
	b, err := p.export(ctx, f, e)
	if err != nil {
		return nil, fail("fetch", f.Id, err)
	}
	if maxBytes > 0 && int64(len(b)) > maxBytes {
		return nil, fail("fetch", f.Id, fmt.Errorf("export of %d bytes: %w", len(b), providers.ErrTooLarge))
	}
	o, err := p.object(ctx, f)
	if err != nil {
		return nil, fail("fetch", f.Id, err)
	}
	o.SizeBytes = int64(len(b)) // this export's, which may differ from an earlier one's
	return &providers.Content{Object: o, Body: io.NopCloser(bytes.NewReader(b))}, nil
}

// refusal maps the 403s Drive answers about a file's content (not about
// the grant) to what they mean: an export over 10 MB is too large; a file
// Drive will not export or download (not exportable, flagged as abusive) is
// unsupported. Any other error is returned as it is: read as a 403, it
// would mark the source reauth_required.
func refusal(err error) error {
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		return err
	}
	for _, item := range ge.Errors {
		switch item.Reason {
		case "exportSizeLimitExceeded":
			return fmt.Errorf("export over Drive's %d bytes: %w", MaxExport, providers.ErrTooLarge)
		case "fileNotExportable", "cannotExportFile", "fileNotDownloadable", "cannotDownloadAbusiveFile":
			return fmt.Errorf("%s: %w", item.Reason, providers.ErrUnsupported)
		}
	}
	return err
}
