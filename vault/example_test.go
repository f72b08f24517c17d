package vault_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"svc.dev/svc/vault"
	"svc.dev/svc/vault/vaulttest"
)

// Preserve a message, read it back verified, then scrub the tenant.
func ExampleVault_Put() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "vault-example-")
	defer os.RemoveAll(dir)
	// The server passes its bbolt-backed Meta and KeyStore and the KEK
	// from its secret configuration.
	v, err := vault.Open(dir, vaulttest.NewMeta(), vaulttest.NewKeyStore(), vaulttest.KEK, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer v.Close()

	msg := "Subject: Invoice\r\nContent-Type: text/plain\r\n\r\nTotal: 42 EUR\r\n"
	o, err := v.Put(ctx, "test:usr_1", vault.PutRequest{
		Name:      "invoice.eml",
		MIMEType:  "message/rfc822",
		SizeBytes: int64(len(msg)),
		SHA256:    vault.Sum([]byte(msg)), // the expected digest, when known
	}, strings.NewReader(msg))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(o.State, o.SizeBytes, o.HasText)

	r, _, err := v.Open(ctx, "test:usr_1", o.ID)
	if err != nil {
		log.Fatal(err)
	}
	body, err := io.ReadAll(r) // an error instead of io.EOF if it does not verify
	r.Close()
	fmt.Println(err == nil && string(body) == msg)

	text, _ := v.OpenText(ctx, "test:usr_1", o.ID)
	t, _ := io.ReadAll(text)
	text.Close()
	fmt.Printf("%q\n", t)

	rep, _ := v.Scrub(ctx, "test:usr_1", nil)
	fmt.Println(rep.Verified, len(rep.Corrupt))
	// Output:
	// committed 61 true
	// true
	// "Total: 42 EUR\r\n"
	// 1 0
}
