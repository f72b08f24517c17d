package migrate

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/storage"
	"svc.dev/svc/vault"
)

// record is one record of a kind: its key (tenant, NUL, id, for what is kept per tenant) and
// its bytes as the seam hands them out (protobuf records in deterministic encoding).
type record struct {
	key   string
	value []byte
}

// kind is one kind of record: how to read every record of it from a store, and how to write
// a batch of them into one. Both the copy and its verification read through each.
type kind struct {
	name string
	each func(ctx context.Context, s storage.Hosted, fn func(record) error) error
	put  func(ctx context.Context, t storage.Hosted, batch []record) error
}

// errStop ends an enumeration early (an emptiness check needs one record).
var errStop = errors.New("stop")

func key(tenant, id string) string { return tenant + "\x00" + id }

func splitKey(k string) (tenant, id string) {
	tenant, id, _ = strings.Cut(k, "\x00")
	return tenant, id
}

var det = proto.MarshalOptions{Deterministic: true}

// recordsKind is a kind the seam lists as storage.Records.
func recordsKind[T proto.Message](name string, of func(storage.Resources) storage.Records[T], newT func() T) kind {
	return kind{
		name: name,
		each: func(ctx context.Context, s storage.Hosted, fn func(record) error) error {
			var ferr error
			err := of(s.Resources()).ScanAll(ctx, func(tenant, id string, m T) bool {
				b, err := det.Marshal(m)
				if err == nil {
					err = fn(record{key(tenant, id), b})
				}
				ferr = err
				return err == nil
			})
			return errors.Join(err, ferr)
		},
		put: func(ctx context.Context, t storage.Hosted, batch []record) error {
			items := make([]storage.Item[T], len(batch))
			for i, r := range batch {
				m := newT()
				if err := proto.Unmarshal(r.value, m); err != nil {
					return err
				}
				tenant, id := splitKey(r.key)
				items[i] = storage.Item[T]{Tenant: tenant, ID: id, Value: m}
			}
			return of(t.Resources()).PutMany(ctx, items)
		},
	}
}

// refs lists the tenant and id of every record of a Records kind (read first: the store is
// never called inside a scan).
func refs[T proto.Message](ctx context.Context, r storage.Records[T]) ([][2]string, error) {
	var out [][2]string
	err := r.ScanAll(ctx, func(tenant, id string, _ T) bool {
		out = append(out, [2]string{tenant, id})
		return true
	})
	return out, err
}

// kinds are every kind of record a data directory's store holds, in copying order.
func kinds() []kind {
	out := []kind{
		{name: "plans", each: eachPlan, put: putPlans},
		recordsKind("executions", storage.Resources.Executions, func() *svcv1.Execution { return new(svcv1.Execution) }),
		recordsKind("jobs", storage.Resources.Jobs, func() *svcv1.Job { return new(svcv1.Job) }),
		recordsKind("sources", storage.Resources.Sources, func() *svcv1.Source { return new(svcv1.Source) }),
		recordsKind("destinations", storage.Resources.Destinations, func() *svcv1.Destination { return new(svcv1.Destination) }),
		recordsKind("manifests", storage.Resources.Manifests, func() *svcv1.Manifest { return new(svcv1.Manifest) }),
		recordsKind("audit entries", storage.Resources.Audit, func() *svcv1.AuditEntry { return new(svcv1.AuditEntry) }),
		recordsKind("events", storage.Resources.EventLog, func() *svcv1.Event { return new(svcv1.Event) }),
		recordsKind("meters", storage.Resources.Meters, func() *svcv1.Meter { return new(svcv1.Meter) }),
		recordsKind("trials", storage.Resources.Trials, func() *svcv1.Trial { return new(svcv1.Trial) }),
		{name: "sealed configurations", each: eachConfig, put: putConfigs},
		{name: "destination origins", each: eachOrigin, put: putOrigins},
		{name: "receipts", each: eachReceipt, put: putReceipts},
		{name: "journals", each: eachJournal, put: putJournals},
		{name: "vault data keys", each: eachVaultKey, put: putVaultKeys},
		{name: "vault objects", each: vaultEach("object"), put: vaultPut("object")},
		{name: "vault blobs", each: vaultEach("blob"), put: vaultPut("blob")},
		{name: "vault packs", each: vaultEach("pack"), put: vaultPut("pack")},
	}
	for _, pk := range storage.PlatformKinds {
		out = append(out, platformKind(pk))
	}
	return out
}

func eachPlan(ctx context.Context, s storage.Hosted, fn func(record) error) error {
	rs, err := refs(ctx, s.Resources().PlanHeaders())
	if err != nil {
		return err
	}
	for _, r := range rs {
		p, err := s.Plans().Get(ctx, r[0], r[1])
		if err != nil {
			return err
		}
		b, err := det.Marshal(p)
		if err != nil {
			return err
		}
		if err := fn(record{key(r[0], r[1]), b}); err != nil {
			return err
		}
	}
	return nil
}

func putPlans(ctx context.Context, t storage.Hosted, batch []record) error {
	for _, r := range batch {
		p := new(svcv1.Plan)
		if err := proto.Unmarshal(r.value, p); err != nil {
			return err
		}
		tenant, _ := splitKey(r.key)
		if err := t.Plans().Put(ctx, tenant, p); err != nil {
			return err
		}
	}
	return nil
}

// eachConfig yields the sealed configuration of every source and destination (as sealed:
// the cluster runs with the same master key, so it opens them).
func eachConfig(ctx context.Context, s storage.Hosted, fn func(record) error) error {
	srcs, err := refs(ctx, s.Resources().Sources())
	if err != nil {
		return err
	}
	dsts, err := refs(ctx, s.Resources().Destinations())
	if err != nil {
		return err
	}
	for _, r := range append(srcs, dsts...) {
		sealed, err := s.Sources().Config(ctx, r[0], r[1])
		if errors.Is(err, storage.ErrNotFound) {
			continue
		} else if err != nil {
			return err
		}
		if err := fn(record{key(r[0], r[1]), sealed}); err != nil {
			return err
		}
	}
	return nil
}

func putConfigs(ctx context.Context, t storage.Hosted, batch []record) error {
	for _, r := range batch {
		tenant, id := splitKey(r.key)
		if err := t.Sources().PutConfig(ctx, tenant, id, r.value); err != nil {
			return err
		}
	}
	return nil
}

func eachOrigin(ctx context.Context, s storage.Hosted, fn func(record) error) error {
	dsts, err := refs(ctx, s.Resources().Destinations())
	if err != nil {
		return err
	}
	for _, r := range dsts {
		src, err := s.Destinations().Origin(ctx, r[0], r[1])
		if errors.Is(err, storage.ErrNotFound) {
			continue
		} else if err != nil {
			return err
		}
		if err := fn(record{key(r[0], r[1]), []byte(src)}); err != nil {
			return err
		}
	}
	return nil
}

func putOrigins(ctx context.Context, t storage.Hosted, batch []record) error {
	for _, r := range batch {
		tenant, id := splitKey(r.key)
		if err := t.Destinations().PutOrigin(ctx, tenant, id, string(r.value)); err != nil {
			return err
		}
	}
	return nil
}

// eachReceipt yields every execution's receipt, as the exact signed bytes.
func eachReceipt(ctx context.Context, s storage.Hosted, fn func(record) error) error {
	var rs [][2]string
	err := s.Resources().Executions().ScanAll(ctx, func(tenant, _ string, x *svcv1.Execution) bool {
		if x.GetReceiptId() != "" {
			rs = append(rs, [2]string{tenant, x.GetReceiptId()})
		}
		return true
	})
	if err != nil {
		return err
	}
	for _, r := range rs {
		raw, err := s.Receipts().Get(ctx, r[0], r[1])
		if errors.Is(err, storage.ErrNotFound) {
			continue // the execution names a receipt it had not stored when it stopped
		} else if err != nil {
			return err
		}
		if err := fn(record{key(r[0], r[1]), raw}); err != nil {
			return err
		}
	}
	return nil
}

func putReceipts(ctx context.Context, t storage.Hosted, batch []record) error {
	for _, r := range batch {
		tenant, id := splitKey(r.key)
		if err := t.Receipts().Put(ctx, tenant, id, r.value); err != nil {
			return err
		}
	}
	return nil
}

// eachJournal yields one record per execution: its whole journal, each entry prefixed by its
// length.
func eachJournal(ctx context.Context, s storage.Hosted, fn func(record) error) error {
	xs, err := refs(ctx, s.Resources().Executions())
	if err != nil {
		return err
	}
	for _, r := range xs {
		var buf []byte
		n := 0
		err := s.Journal().Scan(ctx, r[0], r[1], func(e []byte) error {
			buf = binary.AppendUvarint(buf, uint64(len(e)))
			buf = append(buf, e...)
			n++
			return nil
		})
		if err != nil {
			return err
		}
		if n == 0 {
			continue
		}
		if err := fn(record{key(r[0], r[1]), buf}); err != nil {
			return err
		}
	}
	return nil
}

// putJournals appends each execution's journal. A journal the target holds already must be
// the same length (a run repeated with --force); one it holds in part is an error, since
// appending again would repeat entries.
func putJournals(ctx context.Context, t storage.Hosted, batch []record) error {
	for _, r := range batch {
		var entries [][]byte
		for b := r.value; len(b) > 0; {
			n, w := binary.Uvarint(b)
			if w <= 0 || uint64(len(b)-w) < n {
				return errors.New("corrupt journal record")
			}
			entries = append(entries, b[w:w+int(n)])
			b = b[w+int(n):]
		}
		tenant, id := splitKey(r.key)
		have, err := t.Journal().Read(ctx, tenant, id)
		if err != nil {
			return err
		}
		switch len(have) {
		case 0:
			if err := t.Journal().Append(ctx, tenant, id, entries); err != nil {
				return err
			}
		case len(entries):
		default:
			return fmt.Errorf("the target holds %d of the %d journal entries of execution %s: empty the target and run again", len(have), len(entries), id)
		}
	}
	return nil
}

func eachVaultKey(ctx context.Context, s storage.Hosted, fn func(record) error) error {
	tenants, err := s.VaultTenants(ctx)
	if err != nil {
		return err
	}
	for _, tenant := range tenants {
		w, err := s.VaultMeta().WrappedKey(ctx, tenant)
		if err != nil {
			return err
		}
		if err := fn(record{key(tenant, ""), w}); err != nil {
			return err
		}
	}
	return nil
}

func putVaultKeys(ctx context.Context, t storage.Hosted, batch []record) error {
	for _, r := range batch {
		tenant, _ := splitKey(r.key)
		have, err := t.VaultMeta().CreateWrappedKey(ctx, tenant, r.value)
		if err != nil {
			return err
		}
		if string(have) != string(r.value) {
			return fmt.Errorf("the target holds another vault data key for tenant %s: its vault content would not open", tenant)
		}
	}
	return nil
}

// vaultEach yields one tenant's vault records of one sort (object, blob, pack), as JSON; pack
// records are found through the blobs placed in packs.
func vaultEach(sort string) func(context.Context, storage.Hosted, func(record) error) error {
	return func(ctx context.Context, s storage.Hosted, fn func(record) error) error {
		tenants, err := s.VaultTenants(ctx)
		if err != nil {
			return err
		}
		for _, tenant := range tenants {
			var recs []record
			err := s.VaultMeta().View(ctx, tenant, func(tx vault.MetaTx) error {
				add := func(id string, v any) error {
					b, err := json.Marshal(v)
					if err == nil {
						recs = append(recs, record{key(tenant, id), b})
					}
					return err
				}
				var ierr error
				switch sort {
				case "object":
					if err := tx.Objects("", func(o vault.Object) bool { ierr = add(o.ID, o); return ierr == nil }); err != nil {
						return err
					}
				case "blob":
					if err := tx.Blobs(vault.Digest{}, func(b vault.Blob) bool { ierr = add(b.Digest.String(), b); return ierr == nil }); err != nil {
						return err
					}
				case "pack":
					packs := map[string]bool{}
					if err := tx.Blobs(vault.Digest{}, func(b vault.Blob) bool {
						for _, p := range []*vault.Placement{b.Hot, b.Cold, b.Text} {
							if p != nil && p.Pack {
								packs[p.Name] = true
							}
						}
						return true
					}); err != nil {
						return err
					}
					for name := range packs {
						p, err := tx.Pack(name)
						if errors.Is(err, vault.ErrNotFound) {
							continue
						} else if err != nil {
							return err
						}
						if ierr = add(name, p); ierr != nil {
							break
						}
					}
				}
				return ierr
			})
			if err != nil {
				return fmt.Errorf("vault of %s: %w", tenant, err)
			}
			for _, r := range recs {
				if err := fn(r); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// vaultPut writes vault records of one sort, one transaction per tenant of the batch. A
// committed object is announced on the target's change feed too, so the cluster's search
// index takes it in.
func vaultPut(sort string) func(context.Context, storage.Hosted, []record) error {
	return func(ctx context.Context, t storage.Hosted, batch []record) error {
		byTenant := map[string][]record{}
		var order []string
		for _, r := range batch {
			tenant, _ := splitKey(r.key)
			if _, ok := byTenant[tenant]; !ok {
				order = append(order, tenant)
			}
			byTenant[tenant] = append(byTenant[tenant], r)
		}
		for _, tenant := range order {
			var announce []storage.Write
			err := t.VaultMeta().Update(ctx, tenant, func(tx vault.MetaTx) error {
				announce = announce[:0]
				for _, r := range byTenant[tenant] {
					var err error
					switch sort {
					case "object":
						var o vault.Object
						if err = json.Unmarshal(r.value, &o); err == nil {
							err = tx.PutObject(o)
							if o.State == vault.StateCommitted || o.State == vault.StateCold {
								announce = append(announce, t.VaultChanged(tenant, o.ID))
							}
						}
					case "blob":
						var b vault.Blob
						if err = json.Unmarshal(r.value, &b); err == nil {
							err = tx.PutBlob(b)
						}
					case "pack":
						var p vault.Pack
						if err = json.Unmarshal(r.value, &p); err == nil {
							err = tx.PutPack(p)
						}
					}
					if err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("vault of %s: %w", tenant, err)
			}
			if len(announce) > 0 {
				if err := t.Apply(ctx, announce...); err != nil {
					return fmt.Errorf("announce the vault objects of %s: %w", tenant, err)
				}
			}
		}
		return nil
	}
}

// platformNames name the platform's kinds in the summary.
var platformNames = map[storage.PlatformKind]string{
	storage.PlatformUser: "platform users", storage.PlatformSession: "platform sessions",
	storage.PlatformOrg: "platform organizations", storage.PlatformApplication: "platform applications",
	storage.PlatformAPIKey: "platform API keys", storage.PlatformConnection: "platform connections",
	storage.PlatformIdempotency: "idempotency records", storage.PlatformConnectSession: "connect sessions",
	storage.PlatformOAuthState: "OAuth states", storage.PlatformWebhook: "webhooks",
	storage.PlatformQueuedEvent: "queued webhook events", storage.PlatformDelivery: "webhook deliveries",
	storage.PlatformBilling: "billing records", storage.PlatformUsageCounter: "usage counters",
	storage.PlatformUsageOnce: "usage applied-once keys", storage.PlatformCeiling: "spending ceilings",
	storage.PlatformIntelState: "intel states", storage.PlatformCreatorState: "creator states",
}

// platformKind is a kind the stores move as PlatformRecords.
func platformKind(pk storage.PlatformKind) kind {
	return kind{
		name: platformNames[pk],
		each: func(ctx context.Context, s storage.Hosted, fn func(record) error) error {
			ex, ok := s.(storage.PlatformExporter)
			if !ok {
				return fmt.Errorf("the store cannot export %s records", pk)
			}
			return ex.ExportPlatform(ctx, pk, func(r storage.PlatformRecord) error {
				return fn(record{r.Key, r.Value})
			})
		},
		put: func(ctx context.Context, t storage.Hosted, batch []record) error {
			im, ok := t.(storage.PlatformImporter)
			if !ok {
				return fmt.Errorf("the target cannot import %s records", pk)
			}
			recs := make([]storage.PlatformRecord, len(batch))
			for i, r := range batch {
				recs[i] = storage.PlatformRecord{Kind: pk, Key: r.key, Value: r.value}
			}
			return im.ImportPlatform(ctx, recs)
		},
	}
}
