package vault_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"

	"svc.dev/svc/vault"
	"svc.dev/svc/vault/vaulttest"
)

// Content that does not hash to what the source said is never committed; content that does
// is verified again whenever it is asked to be.
func ExampleVault_Verify() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "vault-example-")
	defer os.RemoveAll(dir)
	v, err := vault.Open(dir, vaulttest.NewMeta(), vaulttest.NewKeyStore(), vaulttest.KEK, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer v.Close()

	doc := "quarterly report\n"
	_, err = v.Put(ctx, "test:usr_1", vault.PutRequest{Name: "report.txt", SizeBytes: int64(len(doc)),
		SHA256: vault.Sum([]byte("another text\n"))}, strings.NewReader(doc))
	fmt.Println("wrong digest refused:", errors.Is(err, vault.ErrInvalidData))

	o, err := v.Put(ctx, "test:usr_1", vault.PutRequest{Name: "report.txt", SizeBytes: int64(len(doc)),
		SHA256: vault.Sum([]byte(doc))}, strings.NewReader(doc))
	if err != nil {
		log.Fatal(err)
	}
	o, err = v.Verify(ctx, "test:usr_1", o.ID)
	fmt.Println("re-verified:", err == nil, o.State)
	// Output:
	// wrong digest refused: true
	// re-verified: true committed
}
