package vault_test

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"svc.dev/svc/vault"
	"svc.dev/svc/vault/vaulttest"
)

// crashContent is the content of seed: mostly 4 KB messages, every 16th a
// streamed file.
func crashContent(seed uint64) []byte {
	if seed%16 == 0 {
		return payload(seed, 300_000+int(seed%7)*100_000)
	}
	return payload(seed, 4096)
}

func openCrashVault(t testing.TB, dir string) *vault.Vault {
	meta, err := vaulttest.NewFileMeta(filepath.Join(dir, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := vault.Open(dir, meta, fileKeys(t, dir), vaulttest.KEK, nil)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// fileKeys keeps the tenant's wrapped key in a file, so that it survives
// the crashes too.
func fileKeys(t testing.TB, dir string) *vaulttest.KeyStore {
	k := vaulttest.NewKeyStore()
	if raw, err := os.ReadFile(filepath.Join(dir, "key")); err == nil {
		k.Set(tenant, raw)
	}
	return k
}

func saveKey(t testing.TB, dir string, k *vaulttest.KeyStore) {
	w, err := k.WrappedKey(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key"), w, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCrashHelper is the process TestCrashSafety kills: it vaults, moves
// to cold and deletes objects from 8 goroutines until it is killed,
// printing what completed. It first redoes the uploads the last crash
// interrupted, as the execution engine does from its journal.
func TestCrashHelper(t *testing.T) {
	dir := os.Getenv("VAULT_CRASH_DIR")
	if dir == "" {
		t.Skip("helper process of TestCrashSafety")
	}
	round, _ := strconv.Atoi(os.Getenv("VAULT_CRASH_ROUND"))
	v := openCrashVault(t, dir)
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
		out.Unlock()
	}
	unfinished, _, err := v.List(ctx, tenant, "", 1<<20, func(o vault.Object) bool {
		return o.State == vault.StateUploading || o.State == vault.StateVerifying || o.State == vault.StateDeleting
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range unfinished {
		if o.State == vault.StateDeleting {
			if _, err := v.Delete(ctx, tenant, o.ID); err != nil {
				t.Fatal(err)
			}
			say("D %s", o.ID)
			continue
		}
		seed, _ := strconv.ParseUint(o.Name, 10, 64)
		if _, err := v.Put(ctx, tenant, vault.PutRequest{ID: o.ID, Name: o.Name, SizeBytes: -1}, bytes.NewReader(crashContent(seed))); err != nil {
			t.Fatalf("redo %s: %v", o.ID, err)
		}
		say("C %s %d", o.ID, seed)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				seed := uint64(round*1_000_000 + w*100_000 + i)
				id := fmt.Sprintf("vlt_01JD%02d%02d%018d", round, w, i)
				if _, err := v.Put(ctx, tenant, vault.PutRequest{ID: id, Name: fmt.Sprint(seed), SizeBytes: -1}, bytes.NewReader(crashContent(seed))); err != nil {
					panic(err)
				}
				say("C %s %d", id, seed)
				switch {
				case i%7 == 3:
					if _, err := v.Cold(ctx, tenant, id); err != nil {
						panic(err)
					}
					say("K %s", id)
				case i%11 == 5:
					if _, err := v.Delete(ctx, tenant, id); err != nil {
						panic(err)
					}
					say("D %s", id)
				}
			}
		})
	}
	wg.Wait()
}

// TestCrashSafety kills a process that is writing to the vault (SIGKILL,
// at random moments, several times) and checks after each crash that
// every object reported committed reads back exactly and verifies, that
// no object is committed without verified content, that temporary files
// are cleaned, and that a scrub finds nothing corrupt and leaves no file
// unused.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts a process several times")
	}
	t.Parallel()
	dir := t.TempDir()
	{ // create the tenant key before the first crash
		keys := vaulttest.NewKeyStore()
		meta, _ := vaulttest.NewFileMeta(filepath.Join(dir, "meta.json"))
		v, err := vault.Open(dir, meta, keys, vaulttest.KEK, nil)
		if err != nil {
			t.Fatal(err)
		}
		put(t, v, tenant, []byte("first"), vault.PutRequest{})
		v.Close()
		saveKey(t, dir, keys)
	}
	committed := map[string]uint64{}
	deleted := map[string]bool{}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 1; round <= 6; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.v")
		cmd.Env = append(os.Environ(), "VAULT_CRASH_DIR="+dir, fmt.Sprintf("VAULT_CRASH_ROUND=%d", round))
		pipe, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = cmd.Stdout
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill it at a random moment once it is writing new objects.
		var stdout bytes.Buffer
		started := make(chan struct{})
		copied := make(chan struct{})
		go func() {
			defer close(copied)
			br := bufio.NewReader(pipe)
			once := false
			for {
				line, err := br.ReadString('\n')
				stdout.WriteString(line)
				if !once && strings.HasPrefix(line, fmt.Sprintf("C vlt_01JD%02d", round)) {
					once = true
					close(started)
				}
				if err != nil {
					if !once {
						close(started)
					}
					return
				}
			}
		}()
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			t.Fatal("the helper did not start writing")
		}
		time.Sleep(time.Duration(rng.IntN(600)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-copied
		_ = cmd.Wait()
		sc := bufio.NewScanner(&stdout)
		n := 0
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 3 && f[0] == "C":
				seed, _ := strconv.ParseUint(f[2], 10, 64)
				committed[f[1]] = seed
				n++
			case len(f) == 2 && f[0] == "D":
				deleted[f[1]] = true
			case strings.Contains(sc.Text(), "panic") || strings.Contains(sc.Text(), "FAIL"):
				t.Fatalf("round %d: the helper failed:\n%s", round, stdout.String())
			}
		}
		t.Logf("round %d: %d objects committed before the kill", round, n)
		if n == 0 {
			t.Fatalf("round %d: nothing committed:\n%s", round, stdout.String())
		}
		checkAfterCrash(t, dir, committed, deleted)
	}
}

func checkAfterCrash(t *testing.T, dir string, committed map[string]uint64, deleted map[string]bool) {
	t.Helper()
	tmp := 0
	for _, sub := range []string{"hot", "cold"} {
		left, _ := os.ReadDir(filepath.Join(dir, sub, "tmp"))
		tmp += len(left)
	}
	t.Logf("%d temporary files left by the crash", tmp)
	v := openCrashVault(t, dir)
	defer v.Close()
	for _, sub := range []string{"hot", "cold"} {
		if left, _ := os.ReadDir(filepath.Join(dir, sub, "tmp")); len(left) != 0 {
			t.Fatalf("%d temporary files left in %s after reopening", len(left), sub)
		}
	}
	for id, seed := range committed {
		o, err := v.Get(ctx, tenant, id)
		if err != nil {
			t.Fatalf("%s was reported committed: %v", id, err)
		}
		switch o.State {
		case vault.StateCommitted, vault.StateCold:
			got, err := read(t, v, tenant, id)
			if err != nil || !bytes.Equal(got, crashContent(seed)) {
				t.Fatalf("%s (%s) reads back wrong: %v", id, o.State, err)
			}
		case vault.StateDeleting, vault.StateDeleted:
		default:
			t.Fatalf("%s was reported committed and is %s", id, o.State)
		}
		if deleted[id] && o.State != vault.StateDeleted {
			t.Fatalf("%s was reported deleted and is %s", id, o.State)
		}
	}
	// No object is committed without verified content, reported or not.
	all, _, err := v.List(ctx, tenant, "", 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range all {
		if o.State == vault.StateCommitted || o.State == vault.StateCold {
			if _, err := read(t, v, tenant, o.ID); err != nil {
				t.Fatalf("%s is %s but does not read back: %v", o.ID, o.State, err)
			}
		}
	}
	rep, err := v.Scrub(ctx, tenant, &vault.ScrubOptions{OrphanGrace: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Corrupt) != 0 || rep.TextCorrupt != 0 {
		t.Fatalf("scrub after a crash: %+v", rep)
	}
	t.Logf("scrub: %d objects, %d verified, %d in flight, %d deletions finished, %d orphan files removed", rep.Objects, rep.Verified, rep.InFlight, rep.Deleted, rep.OrphanFiles)
}
