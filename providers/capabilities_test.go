package providers_test

import (
	"context"
	"testing"

	"svc.dev/svc/providers"
)

// batchOnly has TrashBatch in its Go type; masked says which capabilities it declares.
type batchOnly struct {
	providers.Provider
	masked map[providers.Capability]bool
}

func (b batchOnly) Trash(context.Context, providers.ActionRequest) (providers.ActionResult, error) {
	return providers.ActionResult{}, nil
}

func (b batchOnly) TrashBatch(context.Context, []providers.ActionRequest) ([]providers.ActionOutcome, error) {
	return nil, nil
}

func (b batchOnly) Supports(c providers.Capability) bool { return !b.masked[c] }

func TestAsBatchTrasher(t *testing.T) {
	for _, tc := range []struct {
		name   string
		masked map[providers.Capability]bool
		want   bool
	}{
		{"declared", nil, true},
		{"batch not declared", map[providers.Capability]bool{providers.CapTrashBatch: true}, false},
		{"trash not declared", map[providers.Capability]bool{providers.CapTrash: true}, false},
	} {
		p := batchOnly{masked: tc.masked}
		if _, ok := providers.AsBatchTrasher(p); ok != tc.want {
			t.Errorf("%s: AsBatchTrasher = %v, want %v", tc.name, ok, tc.want)
		}
		caps := providers.CapabilitiesOf(p)
		has := false
		for _, c := range caps {
			has = has || c == providers.CapTrashBatch
		}
		if has != tc.want {
			t.Errorf("%s: CapabilitiesOf = %v", tc.name, caps)
		}
	}
}

// batchFetcher has FetchBatch in its Go type; masked says which capabilities it declares.
type batchFetcher struct {
	providers.Provider
	masked map[providers.Capability]bool
}

func (b batchFetcher) FetchBatch(context.Context, []providers.FetchRequest, func(int, providers.FetchOutcome)) error {
	return nil
}

func (b batchFetcher) Supports(c providers.Capability) bool { return !b.masked[c] }

func TestAsBatchFetcher(t *testing.T) {
	if _, ok := providers.AsBatchFetcher(batchFetcher{}); !ok {
		t.Error("a declared batch fetcher is not found")
	}
	if _, ok := providers.AsBatchFetcher(batchFetcher{masked: map[providers.Capability]bool{providers.CapFetchBatch: true}}); ok {
		t.Error("an undeclared batch fetcher is found")
	}
}

func TestInlineBudget(t *testing.T) {
	var b providers.InlineBudget
	if b.Take(providers.MaxInlineBytes + 1) {
		t.Error("an object over MaxInlineBytes fits")
	}
	if b.Take(-1) {
		t.Error("an object of unknown size fits")
	}
	n := 0
	for b.Take(providers.MaxInlineBytes) {
		n++
	}
	if n != providers.MaxFetchBatchBytes/providers.MaxInlineBytes {
		t.Errorf("%d objects of MaxInlineBytes fit, want %d", n, providers.MaxFetchBatchBytes/providers.MaxInlineBytes)
	}
	if !b.Take(0) {
		t.Error("an empty object does not fit a full budget")
	}
}
