package bolt_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"svc.dev/svc/storage/bolt"
)

// TestNestedTransactionEndsTheTestBinary checks the guard: a List filter that reads the store
// (a second transaction in the same goroutine) ends the process with both stacks, even when
// the code that made the mistake would recover a panic.
func TestNestedTransactionEndsTheTestBinary(t *testing.T) {
	if os.Getenv("STORE_NEST") == "1" {
		db, err := bolt.Open(filepath.Join(os.Getenv("STORE_DIR"), "svc.db"))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		c := bolt.NewCollection(db, "things", func() *wrapperspb.StringValue { return &wrapperspb.StringValue{} })
		for _, id := range []string{"a", "b"} {
			if err := c.Put(ctx, "t", id, wrapperspb.String(id)); err != nil {
				t.Fatal(err)
			}
		}
		defer func() { recover() }() // as an HTTP server would
		c.List(ctx, "t", "", 10, func(*wrapperspb.StringValue) bool {
			_, err := c.Get(ctx, "t", "a") // the mistake
			return err == nil
		})
		t.Fatal("the nested transaction was allowed")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNestedTransactionEndsTheTestBinary$")
	cmd.Env = append(os.Environ(), "STORE_NEST=1", "STORE_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the process survived a nested transaction:\n%s", out)
	}
	for _, want := range []string{"store: nested transaction", "the open transaction began at", "Collection[...]).List", "Collection[...]).Get"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestReaderReadsInTheSameTransaction is the way a filter reads other resources.
func TestReaderReadsInTheSameTransaction(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "svc.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	newS := func() *wrapperspb.StringValue { return &wrapperspb.StringValue{} }
	things := bolt.NewCollection(db, "things", newS)
	owners := bolt.NewCollection(db, "owners", newS)
	for _, id := range []string{"a", "b", "c"} {
		if err := things.Put(ctx, "t", id, wrapperspb.String(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := owners.Put(ctx, "t", "b", wrapperspb.String("kept")); err != nil {
		t.Fatal(err)
	}
	page, err := things.ListIn(ctx, "t", "", 10, func(r *bolt.Reader, m *wrapperspb.StringValue) bool {
		o, err := bolt.GetIn(r, owners, "t", m.GetValue())
		return err == nil && o.GetValue() == "kept"
	})
	if err != nil || len(page.Items) != 1 || page.Items[0].GetValue() != "b" {
		t.Fatalf("ListIn = %v, %v", page.Items, err)
	}
}
