package migrate

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"svc.dev/svc"
	"svc.dev/svc/platform"
	"svc.dev/svc/receipt"
	"svc.dev/svc/storage"
	"svc.dev/svc/vault/backend"
)

// ErrTargetNotEmpty is returned (wrapped) when the target store or bucket already holds
// records or files and Options.Force is not set.
var ErrTargetNotEmpty = errors.New("the target is not empty")

// ErrMismatch is returned (wrapped) when what was read back from the target differs from the
// source: a count or a content hash.
var ErrMismatch = errors.New("the copy differs from the source")

// Options say what to copy where.
type Options struct {
	// From is the data directory of a stopped single-node server.
	From string
	// To is the cluster's store, opened by the caller; it must keep shared secrets
	// (storage.Secrets) and take platform records (storage.PlatformImporter). Run does not
	// close it.
	To storage.Hosted
	// VaultHot and VaultCold are the cluster's vault tiers; a nil one is not copied (the
	// cluster then keeps that tier in a data directory: only a one-process cluster can).
	VaultHot, VaultCold backend.Backend
	// Force copies into a target that holds records already: records with the same keys are
	// replaced, others are kept, and the check compares only what was copied.
	Force bool
	// MasterKey is the data directory's master key; nil loads it as the server does
	// (svc.LoadMasterKey: the environment, then the directory's key file).
	MasterKey []byte
	// Progress, when set, is told what is being copied (one line per kind).
	Progress io.Writer
}

// Count is what one kind of record came to.
type Count struct {
	Kind string
	// Source is how many records of the kind the data directory holds; Target how many of
	// them the target holds after the copy (equal, or Run fails).
	Source, Target int
	// Hash is the SHA-256 over the kind's records (sorted by key), the same on both sides.
	Hash string
}

// Report is what Run copied and checked.
type Report struct {
	Counts []Count
	// VaultFiles and VaultBytes count the vault files copied (per tier given), each re-read
	// from the target and its SHA-256 compared with the source's.
	VaultFiles map[string]int
	VaultBytes map[string]int64
	// ReceiptKeys are the ids of the receipt signing keys now in the target, and
	// ReceiptKeyCurrent the one that signs.
	ReceiptKeys       []string
	ReceiptKeyCurrent string
	// UsageLogDeltas is how many pending usage increments (the usage log's tail, not yet in
	// the counters) were added to the target's counters.
	UsageLogDeltas int
	// KeyID names the master key the receipt keys are sealed under.
	KeyID   string
	Elapsed time.Duration
}

// batchSize is how many records go to the target in one write.
const batchSize = 500

// usageLogFile is the server's usage log in a data directory (server's usageLogFile).
const usageLogFile = "usage.log"

// Run copies the data directory opts.From into opts.To (and the vault tiers given), then
// checks the copy. The directory's server must be stopped (its store is opened, which fails
// while a server holds it). A target that is not empty is refused unless opts.Force.
func Run(ctx context.Context, opts Options) (*Report, error) {
	start := time.Now()
	if opts.To == nil {
		return nil, errors.New("migrate: no target store")
	}
	sec, ok := opts.To.(storage.Secrets)
	if !ok {
		return nil, errors.New("migrate: the target store cannot keep shared secrets (the receipt keys): use a PostgreSQL store")
	}
	master := opts.MasterKey
	src, err := svc.OpenStoppedStore(opts.From)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	defer src.Close()
	if master == nil {
		if master, err = svc.LoadMasterKey(opts.From, ""); err != nil {
			return nil, fmt.Errorf("migrate: %w", err)
		}
	}
	env, err := platform.NewLocalEnvelope(master)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	tiers := map[string]backend.Backend{}
	if opts.VaultHot != nil {
		tiers["hot"] = opts.VaultHot
	}
	if opts.VaultCold != nil {
		tiers["cold"] = opts.VaultCold
	}
	ks := kinds()
	if !opts.Force {
		if err := checkEmpty(ctx, opts.To, sec, ks, tiers); err != nil {
			return nil, err
		}
	}
	rep := &Report{VaultFiles: map[string]int{}, VaultBytes: map[string]int64{}, KeyID: env.KeyID()}
	say := func(format string, a ...any) {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, format+"\n", a...)
		}
	}
	for _, k := range ks {
		n, err := copyKind(ctx, k, src, opts.To)
		if err != nil {
			return nil, fmt.Errorf("migrate: copy %s: %w", k.name, err)
		}
		if n > 0 {
			say("copied %d %s", n, k.name)
		}
	}
	if rep.UsageLogDeltas, err = copyUsageLog(ctx, opts.From, src, opts.To); err != nil {
		return nil, err
	}
	if err := copyReceiptKeys(ctx, opts.From, sec, env, rep); err != nil {
		return nil, err
	}
	say("receipt keys: %d, sealed under %s", len(rep.ReceiptKeys), rep.KeyID)
	for _, tier := range []string{"hot", "cold"} {
		dst, ok := tiers[tier]
		if !ok {
			continue
		}
		files, size, err := copyVaultTier(ctx, filepath.Join(opts.From, svc.VaultDir, tier), dst)
		if err != nil {
			return nil, fmt.Errorf("migrate: vault %s tier: %w", tier, err)
		}
		rep.VaultFiles[tier], rep.VaultBytes[tier] = files, size
		say("vault %s tier: %d files, %d bytes, each read back and its SHA-256 checked", tier, files, size)
	}
	// Check: every kind read again on both sides, counted and hashed.
	for _, k := range ks {
		c, err := verifyKind(ctx, k, src, opts.To)
		if err != nil {
			return nil, fmt.Errorf("migrate: check %s: %w", k.name, err)
		}
		rep.Counts = append(rep.Counts, c)
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// checkEmpty refuses a target that holds any record, receipt keys or vault files.
func checkEmpty(ctx context.Context, t storage.Hosted, sec storage.Secrets, ks []kind, tiers map[string]backend.Backend) error {
	for _, k := range ks {
		found := false
		err := k.each(ctx, t, func(record) error { found = true; return errStop })
		if err != nil && !errors.Is(err, errStop) {
			return fmt.Errorf("migrate: read the target's %s: %w", k.name, err)
		}
		if found {
			return fmt.Errorf("migrate: %w: it holds %s (use --force to copy into it anyway)", ErrTargetNotEmpty, k.name)
		}
	}
	if _, _, err := sec.Secret(ctx, svc.ReceiptKeysSecret); err == nil {
		return fmt.Errorf("migrate: %w: it holds receipt signing keys (use --force to copy into it anyway)", ErrTargetNotEmpty)
	} else if !errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("migrate: read the target's receipt keys: %w", err)
	}
	for tier, b := range tiers {
		found := false
		err := b.List(ctx, "", func(backend.Info) error { found = true; return errStop })
		if err != nil && !errors.Is(err, errStop) {
			return fmt.Errorf("migrate: list the vault %s tier %s: %w", tier, b, err)
		}
		if found {
			return fmt.Errorf("migrate: %w: the vault %s tier %s holds files (use --force to copy into it anyway)", ErrTargetNotEmpty, tier, b)
		}
	}
	return nil
}

// copyKind copies every record of k in batches and returns how many it copied.
func copyKind(ctx context.Context, k kind, src, dst storage.Hosted) (int, error) {
	var batch []record
	n := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := k.put(ctx, dst, batch); err != nil {
			return err
		}
		n += len(batch)
		batch = batch[:0]
		return nil
	}
	err := k.each(ctx, src, func(r record) error {
		batch = append(batch, r)
		if len(batch) >= batchSize {
			return flush()
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	return n, flush()
}

// digestOf hashes records sorted by key: key, value, each length-prefixed.
type digestOf map[string][32]byte

func (d digestOf) sum(only digestOf) (string, int) {
	keys := make([]string, 0, len(d))
	for k := range d {
		if only == nil || hasKey(only, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		v := d[k]
		fmt.Fprintf(h, "%d:%s", len(k), k)
		h.Write(v[:])
	}
	return fmt.Sprintf("%x", h.Sum(nil)), len(keys)
}

func hasKey(d digestOf, k string) bool { _, ok := d[k]; return ok }

func collect(ctx context.Context, k kind, s storage.Hosted) (digestOf, error) {
	d := digestOf{}
	err := k.each(ctx, s, func(r record) error {
		d[r.key] = sha256.Sum256(r.value)
		return nil
	})
	return d, err
}

// verifyKind reads k on both sides and compares the records the source holds: each must be
// in the target with the same bytes.
func verifyKind(ctx context.Context, k kind, src, dst storage.Hosted) (Count, error) {
	sd, err := collect(ctx, k, src)
	if err != nil {
		return Count{}, err
	}
	td, err := collect(ctx, k, dst)
	if err != nil {
		return Count{}, err
	}
	sh, sn := sd.sum(nil)
	th, tn := td.sum(sd)
	c := Count{Kind: k.name, Source: sn, Target: tn, Hash: sh}
	if sn != tn || sh != th {
		for key, v := range sd {
			if w, ok := td[key]; !ok || w != v {
				tenant, id := splitKey(key)
				return c, fmt.Errorf("%w: %d in the source, %d in the target; first difference: %s %s", ErrMismatch, sn, tn, tenant, id)
			}
		}
		return c, fmt.Errorf("%w: %d in the source, %d in the target", ErrMismatch, sn, tn)
	}
	return c, nil
}

// copyUsageLog adds the usage log's tail (what the server logged and had not added to the
// counters when it stopped) to the target's counters, so no metered operation is lost.
func copyUsageLog(ctx context.Context, dir string, src, dst storage.Hosted) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, usageLogFile))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("migrate: usage log: %w", err)
	}
	off, err := src.Usage().LogOffset(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrate: usage log: %w", err)
	}
	if off > int64(len(b)) {
		off = 0 // the log was started again after it was all read (the meter's reading too)
	}
	if off == int64(len(b)) {
		return 0, nil
	}
	deltas, _ := platform.ParseUsageLog(b[off:])
	if err := dst.Usage().Add(ctx, deltas); err != nil {
		return 0, fmt.Errorf("migrate: usage log: %w", err)
	}
	return len(deltas), nil
}

// copyReceiptKeys moves the receipt signing keys into the target's secrets, sealed; keys the
// target holds already must include them all (a repeated run).
func copyReceiptKeys(ctx context.Context, dir string, sec storage.Secrets, env platform.Envelope, rep *Report) error {
	data, err := receipt.KeyFileData(filepath.Join(dir, svc.ReceiptKeysDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("migrate: receipt keys: %w", err)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no key yet (no receipt either: the server would not start): the cluster makes one
	}
	ks := svc.SharedReceiptKeys(sec, env)
	var want []string
	{
		fk, err := receipt.OpenKeyring(filepath.Join(dir, svc.ReceiptKeysDir))
		if err != nil {
			return fmt.Errorf("migrate: receipt keys: %w", err)
		}
		want = fk.KeyIDs()
		if err := receipt.ImportKeyring(ctx, ks, data); err != nil && !errors.Is(err, receipt.ErrKeysChanged) {
			return fmt.Errorf("migrate: receipt keys: %w", err)
		}
	}
	k, err := receipt.OpenStoredKeyring(ctx, ks, "the target", svc.ReceiptKeyActivation)
	if err != nil {
		return fmt.Errorf("migrate: receipt keys in the target: %w", err)
	}
	rep.ReceiptKeys, rep.ReceiptKeyCurrent = k.KeyIDs(), k.Current()
	for _, kid := range want {
		if !slices.Contains(rep.ReceiptKeys, kid) {
			return fmt.Errorf("migrate: %w: receipt key %s is not among the target's receipt keys (it holds keys of another deployment)", ErrMismatch, kid)
		}
	}
	return nil
}
