package billing_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"svc.dev/svc/platform/billing"
)

// fakeProcessor is a processor that honours idempotency keys as Stripe does, and counts the
// objects it really created.
type fakeProcessor struct {
	mu        sync.Mutex
	byKey     map[string]string
	created   int
	items     []billing.InvoiceItem
	failAfter bool // lose the answer after creating (a crash before it is recorded)
	calls     atomic.Int32
	delay     time.Duration
}

func (f *fakeProcessor) create(key string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byKey == nil {
		f.byKey = map[string]string{}
	}
	id, ok := f.byKey[key]
	if !ok {
		f.created++
		id = fmt.Sprintf("obj_%d", f.created)
		f.byKey[key] = id
	}
	if f.failAfter {
		return "", errors.New("connection reset")
	}
	return id, nil
}

func (f *fakeProcessor) CreateCustomer(_ context.Context, key string, _ billing.Customer) (string, error) {
	f.calls.Add(1)
	time.Sleep(f.delay)
	return f.create(key)
}

func (f *fakeProcessor) AddInvoiceItem(_ context.Context, key string, it billing.InvoiceItem) (string, error) {
	id, err := f.create(key)
	if err == nil {
		f.mu.Lock()
		f.items = append(f.items, it)
		f.mu.Unlock()
	}
	return id, err
}

func (f *fakeProcessor) PortalURL(_ context.Context, customerID, _ string) (string, error) {
	return "https://portal.example/" + customerID, nil
}

type memStore struct {
	mu        sync.Mutex
	customers map[string]string
	items     map[string]string
}

func newMemStore() *memStore {
	return &memStore{customers: map[string]string{}, items: map[string]string{}}
}

func (m *memStore) Customer(_ context.Context, org string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id, ok := m.customers[org]; ok {
		return id, nil
	}
	return "", billing.ErrNotFound
}

func (m *memStore) PutCustomer(_ context.Context, org, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.customers[org] = id
	return nil
}

func (m *memStore) InvoiceItem(_ context.Context, org, month, meter string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id, ok := m.items[org+"/"+month+"/"+meter]; ok {
		return id, nil
	}
	return "", billing.ErrNotFound
}

func (m *memStore) PutInvoiceItem(_ context.Context, org, month, meter, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.items[org+"/"+month+"/"+meter] = id
	return nil
}

func TestCustomerOncePerOrganization(t *testing.T) {
	ctx := context.Background()
	p, s := &fakeProcessor{}, newMemStore()
	b := billing.New(p, s)
	// The first attempt's answer is lost after the processor created the customer.
	p.failAfter = true
	if _, err := b.EnsureCustomer(ctx, billing.Customer{OrgID: "org_1", Name: "Acme"}); err == nil {
		t.Fatal("lost answer not reported")
	}
	p.failAfter = false
	var ids []string
	for range 3 {
		id, err := b.EnsureCustomer(ctx, billing.Customer{OrgID: "org_1", Name: "Acme"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if p.created != 1 || ids[0] != ids[1] || ids[1] != ids[2] {
		t.Fatalf("%d customers created, ids %v", p.created, ids)
	}
	if id, _ := b.EnsureCustomer(ctx, billing.Customer{OrgID: "org_2"}); id == ids[0] || p.created != 2 {
		t.Fatalf("another organization shares the customer: %s", id)
	}
}

func TestCloseMonthExactlyOnce(t *testing.T) {
	ctx := context.Background()
	p, s := &fakeProcessor{}, newMemStore()
	b := billing.New(p, s)
	lines := []billing.Line{{Meter: "base", Cents: 1900}, {Meter: "plans", Cents: 250}, {Meter: "executions", Cents: 0}}
	c := billing.Customer{OrgID: "org_1"}
	p.failAfter = true
	if _, err := b.CloseMonth(ctx, c, "2026-10", lines); err == nil {
		t.Fatal("lost answer not reported")
	}
	p.failAfter = false
	n1, err := b.CloseMonth(ctx, c, "2026-10", lines)
	if err != nil {
		t.Fatal(err)
	}
	n2, err := b.CloseMonth(ctx, c, "2026-10", lines)
	if err != nil || n2 != 0 {
		t.Fatalf("second close created %d: %v", n2, err)
	}
	// One customer, one item per charged line; the zero line makes none.
	if n1 != 2 || p.created != 3 {
		t.Fatalf("created %d items, %d objects", n1, p.created)
	}
	if _, err := b.CloseMonth(ctx, c, "October", lines); err == nil {
		t.Fatal("a malformed month was accepted")
	}
	if n, _ := b.CloseMonth(ctx, c, "2026-11", lines); n != 2 || p.created != 5 {
		t.Fatalf("the next month: %d, %d", n, p.created)
	}
}

func TestConcurrentPortalRequestsMakeOneCustomer(t *testing.T) {
	p, s := &fakeProcessor{delay: 10 * time.Millisecond}, newMemStore()
	b := billing.New(p, s)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { b.PortalURL(context.Background(), billing.Customer{OrgID: "org_1"}, "") })
	}
	wg.Wait()
	if n := p.calls.Load(); n != 1 {
		t.Fatalf("%d customer creations asked of the processor for one organization", n)
	}
}
