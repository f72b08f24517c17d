package vault_test

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"svc.dev/svc/internal/versitygw"
	"svc.dev/svc/vault"
	"svc.dev/svc/vault/backend/s3"
	"svc.dev/svc/vault/vaulttest"
)

// TestS3Backends runs the vault with both tiers on a real S3-compatible
// server (versitygw on loopback).
func TestS3Backends(t *testing.T) {
	t.Parallel()
	srv := versitygw.Start(t)
	bucket := srv.Bucket(t, nil)
	hot, err := s3.NewWithClient(srv.Client, bucket, "hot/")
	if err != nil {
		t.Fatal(err)
	}
	cold, err := s3.NewWithClient(srv.Client, bucket, "cold/")
	if err != nil {
		t.Fatal(err)
	}
	meta := vaulttest.NewMeta()
	v, err := vault.Open("", meta, vaulttest.NewKeyStore(), vaulttest.KEK, &vault.Options{Hot: hot, Cold: cold})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()

	small := []byte(message)
	large := payload(77, 3<<20+11)
	a := put(t, v, tenant, small, vault.PutRequest{MIMEType: "message/rfc822"})
	b := put(t, v, tenant, large, vault.PutRequest{SizeBytes: int64(len(large)), SHA256: vault.Sum(large)})
	twin := put(t, v, tenant, large, vault.PutRequest{})
	if !a.HasText {
		t.Error("message has no text")
	}
	for id, want := range map[string][]byte{a.ID: small, b.ID: large, twin.ID: large} {
		if got, err := read(t, v, tenant, id); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("read %s: %v", id, err)
		}
	}
	if _, err := v.Cold(ctx, tenant, b.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := read(t, v, tenant, b.ID); err != nil || !bytes.Equal(got, large) {
		t.Fatalf("cold read: %v", err)
	}

	// Damage the hot copy in the bucket: reads of the hot twin fail,
	// verification marks it corrupt, and a scrub repairs it from the cold
	// copy.
	var blob vault.Blob
	meta.View(ctx, tenant, func(tx vault.MetaTx) error { blob, err = tx.Blob(b.SHA256); return err })
	key := "hot/" + blob.Hot.Name
	obj, err := srv.Client.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(obj)
	obj.Close()
	raw[1000] ^= 1
	if _, err := srv.Client.PutObject(ctx, bucket, key, bytes.NewReader(raw), int64(len(raw)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := read(t, v, tenant, twin.ID); !errors.Is(err, vault.ErrInvalidData) {
		t.Fatalf("read of damaged content: %v", err)
	}
	rep, err := v.Scrub(ctx, tenant, &vault.ScrubOptions{OrphanGrace: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Repaired) != 1 || rep.Repaired[0] != twin.ID || len(rep.Corrupt) != 0 {
		t.Fatalf("scrub: %+v", rep)
	}
	if got, err := read(t, v, tenant, twin.ID); err != nil || !bytes.Equal(got, large) {
		t.Fatalf("read after repair: %v", err)
	}

	for _, id := range []string{a.ID, b.ID, twin.ID} {
		if _, err := v.Delete(ctx, tenant, id); err != nil {
			t.Fatal(err)
		}
	}
	left := 0
	for range srv.Client.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
		left++
	}
	if left != 0 {
		t.Errorf("%d objects left in the bucket after deleting everything", left)
	}
}
