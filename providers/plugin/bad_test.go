package plugin_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"svc.dev/svc/providers"
)

// badProvider returns malformed data on purpose, to show the host rejects
// it.
type badProvider struct{ mode string }

var badDescription = providers.Description{
	Name: providers.Simulated, ProtocolVersion: providers.ProtocolVersion,
	OperationClasses: []providers.OperationClass{providers.Discover, providers.Preserve, providers.Monitor},
	Capabilities:     []providers.Capability{providers.CapFetchBatch},
	ObjectKinds:      []providers.Kind{providers.KindFile},
	MarkerKinds:      []providers.MarkerKind{providers.MarkerNone},
}

func newBad(_ context.Context, cfg providers.Config) (providers.Provider, error) {
	return &badProvider{mode: cfg["mode"]}, nil
}

func (b *badProvider) Describe(context.Context) (providers.Description, error) {
	return badDescription, nil
}

func (b *badProvider) List(context.Context, providers.ListRequest) (providers.Page, error) {
	o := providers.Object{ID: "a", Kind: providers.KindFile, SizeBytes: 3}
	page := providers.Page{Marker: providers.Marker{Kind: providers.MarkerNone}}
	switch b.mode {
	case "empty_id":
		o.ID = ""
	case "negative_size":
		o.SizeBytes = -5
	case "control_id":
		o.ID = "a\x00b"
	case "bad_sha":
		o.SHA256 = "XYZ"
	case "unknown_kind":
		o.Kind = "spaceship"
	case "no_marker":
		page.Marker = providers.Marker{}
	case "huge_page":
		// Valid, but more than a content lane holds: it comes inline.
		meta := make(map[string]string, 256)
		for i := range 256 {
			meta[fmt.Sprintf("k%03d", i)] = strings.Repeat("v", 4096)
		}
		for i := range 5 {
			page.Objects = append(page.Objects, providers.Object{ID: fmt.Sprint("big", i), Kind: providers.KindFile, Metadata: meta})
		}
		return page, nil
	}
	page.Objects = []providers.Object{o}
	return page, nil
}

func (b *badProvider) Changes(context.Context, providers.ChangesRequest) (providers.ChangePage, error) {
	return providers.ChangePage{Marker: providers.Marker{Kind: providers.MarkerNone}}, nil
}

func (b *badProvider) Fetch(_ context.Context, req providers.FetchRequest) (*providers.Content, error) {
	o := providers.Object{ID: "a", Kind: providers.KindFile, SizeBytes: 10}
	body := "0123456789"
	switch b.mode {
	case "short_content":
		body = "012"
	case "stall_content":
		// Three bytes, then nothing for longer than the host waits.
		return &providers.Content{Object: o, Body: io.NopCloser(io.MultiReader(strings.NewReader("012"), stall{}, strings.NewReader("3456789")))}, nil
	}
	return &providers.Content{Object: o, Body: io.NopCloser(strings.NewReader(body))}, nil
}

// FetchBatch answers each request with object "a" of ten bytes, but for the mode's fault.
func (b *badProvider) FetchBatch(_ context.Context, reqs []providers.FetchRequest, fn func(int, providers.FetchOutcome)) error {
	for i := range reqs {
		o := providers.Object{ID: "a", Kind: providers.KindFile, SizeBytes: 10}
		content := []byte("0123456789")
		switch {
		case b.mode == "batch_short" && i == 1:
			content = content[:3]
		case b.mode == "batch_skip" && i == 1:
			continue
		case b.mode == "batch_stop" && i == 1:
			return nil
		case b.mode == "batch_over":
			o.SizeBytes = providers.MaxInlineBytes + 1
			content = make([]byte, o.SizeBytes)
		case b.mode == "batch_fail" && i == 1:
			return fmt.Errorf("the account went away: %w", providers.ErrPermission)
		}
		fn(i, providers.FetchOutcome{Object: o, Content: content})
	}
	return nil
}

type stall struct{}

func (stall) Read([]byte) (int, error) {
	time.Sleep(2 * time.Second)
	return 0, io.EOF
}
