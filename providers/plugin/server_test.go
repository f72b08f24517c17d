package plugin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/internal/pluginpb"
)

// stubProvider is a provider's methods that TestPluginReadsAhead does not
// use.
type stubProvider struct{}

// pagedProvider serves five pages (tokens "", "1" ... "4") and counts the
// List calls per token; page "3" fails once with ErrTransient.
type pagedProvider struct {
	stubProvider
	mu    sync.Mutex
	calls map[string]int
}

func (stubProvider) Describe(context.Context) (providers.Description, error) {
	return providers.Description{}, nil
}
func (stubProvider) Changes(context.Context, providers.ChangesRequest) (providers.ChangePage, error) {
	return providers.ChangePage{}, nil
}
func (stubProvider) Fetch(context.Context, providers.FetchRequest) (*providers.Content, error) {
	return nil, providers.ErrNotFound
}

func (p *pagedProvider) List(_ context.Context, req providers.ListRequest) (providers.Page, error) {
	p.mu.Lock()
	p.calls[req.PageToken]++
	n := p.calls[req.PageToken]
	p.mu.Unlock()
	if req.PageToken == "3" && n == 1 {
		return providers.Page{}, fmt.Errorf("page 3: %w", providers.ErrTransient)
	}
	i, _ := strconv.Atoi(req.PageToken)
	page := providers.Page{Objects: []providers.Object{{ID: fmt.Sprint("o", i), Kind: providers.KindFile}}}
	if i < 4 {
		page.NextPageToken = strconv.Itoa(i + 1)
	} else {
		page.Marker = providers.Marker{Kind: providers.MarkerNone}
	}
	return page, nil
}

// TestPluginReadsAhead checks the plugin's read-ahead of the next page: a
// listing read to the end calls the provider once per page, an error of a
// page produced ahead is that page's answer, and a read-ahead nobody asks
// for is dropped.
func TestPluginReadsAhead(t *testing.T) {
	ctx := context.Background()
	prov := &pagedProvider{calls: map[string]int{}}
	s := newServer(badDescription(), func(context.Context, providers.Config) (providers.Provider, error) { return prov, nil })
	open, err := s.Open(ctx, &pluginpb.OpenRequest{})
	if err != nil {
		t.Fatal(err)
	}
	id := open.GetInstanceId()
	list := func(token string) error {
		_, err := s.List(ctx, &pluginpb.ListRequest{InstanceId: id, SourceRef: "x", PageToken: token})
		return err
	}
	calls := func(token string) int {
		prov.mu.Lock()
		defer prov.mu.Unlock()
		return prov.calls[token]
	}
	for _, token := range []string{"", "1", "2", "3", "3", "4"} {
		err := list(token)
		if token == "3" && calls("3") == 1 {
			st, _ := status.FromError(err)
			if perr := errorFromStatus(st); perr == nil || !providers.IsRetryable(perr) {
				t.Fatalf("page 3, first time: got %v, want the transient error", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("page %q: %v", token, err)
		}
	}
	prov.mu.Lock()
	got := fmt.Sprint(prov.calls)
	prov.mu.Unlock()
	if want := "map[:1 1:1 2:1 3:2 4:1]"; got != want {
		t.Fatalf("provider calls %s, want %s", got, want)
	}
	s.aheadMu.Lock()
	left := len(s.ahead)
	s.aheadMu.Unlock()
	if left != 0 {
		t.Fatalf("%d pages held after the last page", left)
	}

	// A listing left half way: its page read ahead goes with the instance.
	if err := list(""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Close(ctx, &pluginpb.CloseRequest{InstanceId: id}); err != nil {
		t.Fatal(err)
	}
	s.aheadMu.Lock()
	left = len(s.ahead)
	s.aheadMu.Unlock()
	if left != 0 {
		t.Fatal("page read ahead kept after Close")
	}
}

func badDescription() providers.Description {
	return providers.Description{
		Name: providers.Simulated, ProtocolVersion: providers.ProtocolVersion,
		OperationClasses: []providers.OperationClass{providers.Discover},
		ObjectKinds:      []providers.Kind{providers.KindFile},
		MarkerKinds:      []providers.MarkerKind{providers.MarkerNone},
	}
}

// smallProvider serves one small object.
type smallProvider struct {
	stubProvider
	data []byte
}

func (p smallProvider) List(context.Context, providers.ListRequest) (providers.Page, error) {
	return providers.Page{}, nil
}

func (p smallProvider) Fetch(context.Context, providers.FetchRequest) (*providers.Content, error) {
	return &providers.Content{Object: providers.Object{ID: "m", Kind: providers.KindMessage, SizeBytes: int64(len(p.data))},
		Body: io.NopCloser(bytes.NewReader(p.data))}, nil
}

// fetchStream collects what a Fetch sends.
type fetchStream struct {
	grpc.ServerStream
	got []byte
}

func (f *fetchStream) Context() context.Context { return context.Background() }
func (f *fetchStream) Send(m *pluginpb.FetchResponse) error {
	f.got = append(f.got, m.GetChunk()...)
	return nil
}

// A fetch sent in messages allocates a buffer the size of a small object, not a whole chunk:
// a clean-up fetches hundreds of thousands of messages of a few KiB.
func TestFetchOfASmallObjectAllocatesLittle(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 500)
	s := newServer(providers.Description{}, nil)
	s.instances[1] = smallProvider{data: data}
	const n = 50
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		st := &fetchStream{}
		if err := s.Fetch(&pluginpb.FetchRequest{InstanceId: 1, ObjectId: "m"}, st); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(st.got, data) {
			t.Fatalf("fetched %d bytes, want %d", len(st.got), len(data))
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > chunkSize/4 {
		t.Fatalf("%d bytes allocated per fetch of a %d-byte object", per, len(data))
	}
}
