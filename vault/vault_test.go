package vault_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"svc.dev/svc/vault"
	"svc.dev/svc/vault/vaulttest"
)

var ctx = context.Background()

const tenant = "test:usr_01JD0000000000000000000001"

func payload(seed uint64, n int) []byte {
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16)})
	b := make([]byte, n)
	r.Read(b)
	return b
}

func put(t testing.TB, v *vault.Vault, tn string, data []byte, req vault.PutRequest) vault.Object {
	t.Helper()
	if req.SizeBytes == 0 && len(data) != 0 {
		req.SizeBytes = -1
	}
	o, err := v.Put(ctx, tn, req, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("put: %v", err)
	}
	return o
}

func read(t interface{ Helper() }, v *vault.Vault, tn, id string) ([]byte, error) {
	t.Helper()
	r, _, err := v.Open(ctx, tn, id)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

func TestPutOpenRoundTrip(t *testing.T) {
	v := vaulttest.Open(t, nil)
	for _, size := range []int{0, 1, 4096, 256 << 10, 256<<10 + 1, 3<<20 + 5} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			data := payload(uint64(size), size)
			o := put(t, v, tenant, data, vault.PutRequest{Name: "f.bin", SizeBytes: int64(size), SHA256: vault.Sum(data)})
			if o.State != vault.StateCommitted || o.SHA256 != vault.Sum(data) || o.SizeBytes != int64(size) || o.CommittedAt.IsZero() || o.VerifiedAt.IsZero() {
				t.Fatalf("object %+v", o)
			}
			got, err := read(t, v, tenant, o.ID)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("read back %d bytes: %v", len(got), err)
			}
			if p := o.Proto(); p.GetId() != o.ID || p.GetSha256() != o.SHA256.String() || p.GetName() != "f.bin" {
				t.Errorf("proto %v", p)
			}
		})
	}
}

func TestDeduplication(t *testing.T) {
	v := vaulttest.Open(t, nil)
	for _, size := range []int{100, 1 << 20} {
		data := payload(7, size)
		a := put(t, v, tenant, data, vault.PutRequest{Name: "a"})
		before := v.Stats().DurableWrites
		b := put(t, v, tenant, data, vault.PutRequest{Name: "b"})
		if a.ID == b.ID || a.SHA256 != b.SHA256 {
			t.Fatalf("objects %s %s", a.ID, b.ID)
		}
		if w := v.Stats().DurableWrites - before; w != 0 {
			t.Errorf("size %d: identical content wrote %d files", size, w)
		}
		// Deleting one keeps the content for the other.
		if _, err := v.Delete(ctx, tenant, a.ID); err != nil {
			t.Fatal(err)
		}
		if got, err := read(t, v, tenant, b.ID); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read after deleting the twin: %v", err)
		}
	}
}

func TestExpectationsMismatch(t *testing.T) {
	v := vaulttest.Open(t, nil)
	for _, size := range []int{10, 1 << 20} {
		data := payload(1, size)
		_, err := v.Put(ctx, tenant, vault.PutRequest{SizeBytes: int64(size) + 1}, bytes.NewReader(data))
		if !errors.Is(err, vault.ErrInvalidData) {
			t.Errorf("size mismatch: %v", err)
		}
		_, err = v.Put(ctx, tenant, vault.PutRequest{SizeBytes: -1, SHA256: vault.Sum([]byte("other"))}, bytes.NewReader(data))
		if !errors.Is(err, vault.ErrInvalidData) {
			t.Errorf("digest mismatch: %v", err)
		}
	}
}

func TestConcurrentSmallPutsShareCommits(t *testing.T) {
	v := vaulttest.Open(t, nil)
	var wg sync.WaitGroup
	objs := make([]vault.Object, 400)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < len(objs); i += 16 {
				objs[i] = put(t, v, tenant, payload(uint64(i), 4096), vault.PutRequest{})
			}
		})
	}
	wg.Wait()
	s := v.Stats()
	t.Logf("%+v, %.1f assets per durable write", s, s.AssetsPerDurableWrite())
	if s.AssetsPerDurableWrite() < 2 {
		t.Errorf("%.1f assets per durable write with 16 writers", s.AssetsPerDurableWrite())
	}
	for i, o := range objs {
		if got, err := read(t, v, tenant, o.ID); err != nil || !bytes.Equal(got, payload(uint64(i), 4096)) {
			t.Fatalf("object %d: %v", i, err)
		}
	}
}

func TestTenantsAreIsolated(t *testing.T) {
	dir := t.TempDir()
	v, err := vault.Open(dir, vaulttest.NewMeta(), vaulttest.NewKeyStore(), vaulttest.KEK, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	data := []byte("secret message body")
	o := put(t, v, "test:usr_A", data, vault.PutRequest{})
	if _, _, err := v.Open(ctx, "live:usr_A", o.ID); !errors.Is(err, vault.ErrNotFound) {
		t.Errorf("another tenant opened it: %v", err)
	}
	// Nothing stored is plaintext, and no file is named by the content's digest.
	err = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		raw, _ := os.ReadFile(p)
		if bytes.Contains(raw, data) || strings.Contains(p, o.SHA256.String()) {
			t.Errorf("%s shows the content or its digest", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// OnChange hears of every commit, tier move and finished deletion, after the change is stored:
// it can read the vault from inside the call.
func TestOnChange(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	var v *vault.Vault
	v = vaulttest.Open(t, &vault.Options{OnChange: func(ctx context.Context, tn string, o vault.Object) {
		stored, err := v.Get(ctx, tn, o.ID)
		mu.Lock()
		defer mu.Unlock()
		if err != nil || stored.State != o.State {
			t.Errorf("told of %s %s, stored %s %v", o.ID, o.State, stored.State, err)
		}
		seen = append(seen, string(o.State))
	}})
	small := put(t, v, tenant, []byte("a small note"), vault.PutRequest{Name: "n.txt", MIMEType: "text/plain"})
	put(t, v, tenant, payload(7, 300<<10), vault.PutRequest{Name: "big.bin"})
	if _, err := v.Cold(ctx, tenant, small.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Warm(ctx, tenant, small.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Delete(ctx, tenant, small.ID); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "committed committed cold committed deleted"; strings.Join(seen, " ") != want {
		t.Fatalf("told of %v, want %s", seen, want)
	}
}

// slowMeta takes its time to record, as a loaded metadata store does, so that groups are
// written while the ones before them still wait to be recorded, and transactions asked for
// one after the other may run in either order.
type slowMeta struct{ *vaulttest.Meta }

func (m slowMeta) Update(ctx context.Context, tenant string, fn func(vault.MetaTx) error) error {
	time.Sleep(time.Duration(rand.IntN(4000)) * time.Microsecond)
	return m.Meta.Update(ctx, tenant, fn)
}

// A pack fills and is closed while the groups written into it are still being recorded: it
// must not be taken for an unused pack and removed under them.
func TestPackClosedWhileGroupsRecord(t *testing.T) {
	defer vault.SetGroupsInFlight(2)()
	meta := slowMeta{vaulttest.NewMeta()}
	v, err := vault.Open(t.TempDir(), meta, vaulttest.NewKeyStore(), vaulttest.KEK, &vault.Options{MaxPackSize: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	var wg sync.WaitGroup
	objs := make([]vault.Object, 200)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < len(objs); i += 8 {
				objs[i] = put(t, v, tenant, payload(uint64(i), 9000), vault.PutRequest{})
			}
		})
	}
	wg.Wait()
	for i, o := range objs {
		if got, err := read(t, v, tenant, o.ID); err != nil || !bytes.Equal(got, payload(uint64(i), 9000)) {
			t.Fatalf("object %d: %v", i, err)
		}
	}
	rep, err := v.Scrub(ctx, tenant, &vault.ScrubOptions{OrphanGrace: time.Nanosecond})
	if err != nil || len(rep.Corrupt) > 0 || rep.Verified != len(objs) {
		t.Fatalf("scrub: %+v, %v", rep, err)
	}
	t.Logf("%+v", v.Stats())
}
