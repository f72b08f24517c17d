package vault

import (
	"context"
	"errors"
	"fmt"

	"svc.dev/svc/vault/internal/seal"
)

// Rotating the key-encryption key.
//
// The tenants' data keys never change (that would mean re-encrypting every
// content); what rotates is the KEK that wraps them. RewrapKeys re-wraps every
// tenant's data key under a new KEK. It is crash-safe and resumable without a
// journal of its own: each key names the KEK it is wrapped under (an 8-byte
// id), the store replaces keys with a compare-and-swap in one transaction per
// batch, so a crash leaves every key wrapped under either the old KEK or the
// new one, and running RewrapKeys again skips the keys already under the new
// one. Until it reports Done, the previous KEK must be kept and given to every
// vault opened meanwhile (Options.PreviousKEKs), with the new one as the
// current: keys created meanwhile are then wrapped under the new one.

// RewrapStore is what RewrapKeys needs of the key store: the server's store
// (store.VaultMeta) implements it beside KeyStore.
type RewrapStore interface {
	KeyStore
	// Tenants lists the tenants that have a wrapped data key, in order.
	Tenants(ctx context.Context) ([]string, error)
	// ReplaceWrappedKeys replaces the wrapped keys of several tenants in
	// one durable transaction, each only if the tenant's key is still Old:
	// if any is not (or is missing), nothing is written and the error
	// wraps ErrInvalidState.
	ReplaceWrappedKeys(ctx context.Context, rs []KeyReplacement) error
}

// KeyReplacement is one tenant's wrapped data key, replaced.
type KeyReplacement struct {
	Tenant   string
	Old, New []byte
}

// RewrapOptions tunes RewrapKeys; nil means defaults.
type RewrapOptions struct {
	// Batch is how many tenants' keys are replaced per transaction; 0
	// means 256.
	Batch int
	// Progress, when set, is called after every batch with the report so
	// far.
	Progress func(RewrapReport)
}

// RewrapReport says what RewrapKeys did.
type RewrapReport struct {
	Tenants   int // tenants with a data key
	Rewrapped int // keys re-wrapped under the new KEK by this run
	Already   int // keys found under the new KEK already (a resumed run)
	// Done reports that every tenant's key is under the new KEK: the
	// previous KEK is no longer needed by the vault.
	Done bool
}

// RewrapKeys re-wraps every tenant's data key in store under kek, unwrapping
// them with kek or any of previous. A key under none of them fails the run
// (wrapping ErrKeyUnavailable) before anything of its batch is written; keys of
// earlier batches stay re-wrapped, and a later run goes on from there.
func RewrapKeys(ctx context.Context, store RewrapStore, kek KEK, previous []KEK, opts *RewrapOptions) (RewrapReport, error) {
	var rep RewrapReport
	if kek == (KEK{}) {
		return rep, fmt.Errorf("rewrap keys: zero key-encryption key: %w", ErrInvalidArgument)
	}
	var o RewrapOptions
	if opts != nil {
		o = *opts
	}
	if o.Batch <= 0 {
		o.Batch = 256
	}
	keks := [][]byte{kek[:]}
	for _, p := range previous {
		keks = append(keks, p[:])
	}
	newID := seal.KEKID(kek[:])
	// A second pass finds the keys created by a vault that still wrapped
	// new keys under the previous KEK during the first.
	for pass := 0; ; pass++ {
		tenants, err := store.Tenants(ctx)
		if err != nil {
			return rep, fmt.Errorf("rewrap keys: list tenants: %w", err)
		}
		rep.Tenants = len(tenants)
		changed := 0
		var batch []KeyReplacement
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			if err := store.ReplaceWrappedKeys(ctx, batch); err != nil {
				return fmt.Errorf("rewrap keys: replace %d keys: %w", len(batch), err)
			}
			rep.Rewrapped += len(batch)
			changed += len(batch)
			batch = batch[:0]
			if o.Progress != nil {
				o.Progress(rep)
			}
			return nil
		}
		for _, tenant := range tenants {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			wrapped, err := store.WrappedKey(ctx, tenant)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return rep, fmt.Errorf("rewrap keys: key of tenant %q: %w", tenant, err)
			}
			if id, ok := seal.WrappedKEKID(wrapped); ok && id == newID {
				if pass == 0 {
					rep.Already++
				}
				continue
			}
			dk, err := seal.Unwrap(keks, wrapped, tenant)
			if err != nil {
				return rep, fmt.Errorf("rewrap keys: tenant %q: %w: %w", tenant, ErrKeyUnavailable, err)
			}
			w, err := seal.Wrap(kek[:], dk, tenant)
			clear(dk)
			if err != nil {
				return rep, err
			}
			batch = append(batch, KeyReplacement{Tenant: tenant, Old: wrapped, New: w})
			if len(batch) == o.Batch {
				if err := flush(); err != nil {
					return rep, err
				}
			}
		}
		if err := flush(); err != nil {
			return rep, err
		}
		if changed == 0 {
			rep.Done = true
			return rep, nil
		}
	}
}

// RewrapKeys re-wraps every tenant's data key under the vault's current KEK
// (the one Open was given), unwrapping with it or Options.PreviousKEKs: open
// the vault with the new KEK and the old one as previous, then call it. The
// vault's KeyStore must be a RewrapStore.
func (v *Vault) RewrapKeys(ctx context.Context, opts *RewrapOptions) (RewrapReport, error) {
	store, ok := v.keys.(RewrapStore)
	if !ok {
		return RewrapReport{}, fmt.Errorf("rewrap keys: the key store cannot replace keys: %w", ErrInvalidArgument)
	}
	var kek KEK
	copy(kek[:], v.keks[0])
	return RewrapKeys(ctx, store, kek, v.opts.PreviousKEKs, opts)
}
