package vaulttest_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"svc.dev/svc/vault"
	"svc.dev/svc/vault/vaulttest"
)

func TestMeta(t *testing.T) {
	vaulttest.RunMeta(t, func(testing.TB) vault.Meta { return vaulttest.NewMeta() })
}

func TestFileMeta(t *testing.T) {
	dir := t.TempDir()
	n := 0
	vaulttest.RunMeta(t, func(testing.TB) vault.Meta {
		n++
		m, err := vaulttest.NewFileMeta(filepath.Join(dir, fmt.Sprint(n)))
		if err != nil {
			t.Fatal(err)
		}
		return m
	})
}

func TestFileMetaSurvivesReopening(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.json")
	m, err := vaulttest.NewFileMeta(path)
	if err != nil {
		t.Fatal(err)
	}
	o := vault.Object{ID: "vlt_01JD0000000000000000000001", State: vault.StateCommitted, SHA256: vault.Sum([]byte("x"))}
	b := vault.Blob{Digest: o.SHA256, Refs: 1}
	err = m.Update(context.Background(), "tn", func(tx vault.MetaTx) error {
		if err := tx.PutObject(o); err != nil {
			return err
		}
		return tx.PutBlob(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	m2, err := vaulttest.NewFileMeta(path)
	if err != nil {
		t.Fatal(err)
	}
	err = m2.View(context.Background(), "tn", func(tx vault.MetaTx) error {
		got, err := tx.Object(o.ID)
		if err != nil || got.SHA256 != o.SHA256 {
			return fmt.Errorf("object %+v, %v", got, err)
		}
		gb, err := tx.Blob(o.SHA256)
		if err != nil || gb.Refs != 1 {
			return fmt.Errorf("blob %+v, %v", gb, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestKeyStoreRewrap(t *testing.T) {
	vaulttest.RunRewrapStore(t, func(testing.TB) vault.RewrapStore { return vaulttest.NewKeyStore() })
}

func TestFileKeyStoreRewrap(t *testing.T) {
	dir := t.TempDir()
	n := 0
	vaulttest.RunRewrapStore(t, func(testing.TB) vault.RewrapStore {
		n++
		k, err := vaulttest.NewFileKeyStore(filepath.Join(dir, fmt.Sprint(n)))
		if err != nil {
			t.Fatal(err)
		}
		return k
	})
}
