package bolt

import (
	"bytes"
	"context"
	"strings"

	bbolt "go.etcd.io/bbolt"

	"svc.dev/svc/platform/billing"
)

const bBilling = "billing"

// Billing is the billing records on bbolt (it implements billing.Store).
type Billing struct{ db *DB }

// Billing returns the billing records of this database.
func (db *DB) Billing() *Billing { return &Billing{db: db} }

var _ billing.Store = (*Billing)(nil)

func (b *Billing) get(key string) (string, error) {
	var out string
	err := b.db.view(func(tx *bbolt.Tx) error {
		bk := tx.Bucket([]byte(bBilling))
		if bk == nil {
			return billing.ErrNotFound
		}
		v := bk.Get([]byte(key))
		if v == nil {
			return billing.ErrNotFound
		}
		out = string(v)
		return nil
	})
	return out, err
}

func (b *Billing) put(ctx context.Context, key, value string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return b.db.update(func(tx *bbolt.Tx) error {
		bk, err := bucket(tx, bBilling)
		if err != nil {
			return err
		}
		return bk.Put([]byte(key), []byte(value))
	})
}

// Customer implements billing.Store.
func (b *Billing) Customer(_ context.Context, orgID string) (string, error) {
	return b.get("customer/" + orgID)
}

// PutCustomer implements billing.Store.
func (b *Billing) PutCustomer(ctx context.Context, orgID, customerID string) error {
	return b.put(ctx, "customer/"+orgID, customerID)
}

// InvoiceItem implements billing.Store.
func (b *Billing) InvoiceItem(_ context.Context, orgID, month, meter string) (string, error) {
	return b.get("item/" + orgID + "/" + month + "/" + meter)
}

// PutInvoiceItem implements billing.Store.
func (b *Billing) PutInvoiceItem(ctx context.Context, orgID, month, meter, itemID string) error {
	return b.put(ctx, "item/"+orgID+"/"+month+"/"+meter, itemID)
}

// UsageOrgs lists the organizations with usage counted in a month.
func (db *DB) UsageOrgs(ctx context.Context, month string) ([]string, error) {
	var out []string
	err := db.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bUsage))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		prefix := []byte("org:")
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if err := ctxErr(ctx); err != nil {
				return err
			}
			parts := strings.SplitN(string(k), "|", 3)
			if len(parts) == 3 && parts[1] == month {
				org := strings.TrimPrefix(parts[0], "org:")
				if len(out) == 0 || out[len(out)-1] != org {
					out = append(out, org)
				}
			}
		}
		return nil
	})
	return out, err
}
