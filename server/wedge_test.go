package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/server"

	"svc.dev/svc/storage/bolt"
)

// TestGrantFilteredListsDoNotWedgeTheStore reproduces the wedge of issue 10: lists of
// executions under a connection, whose grant filter read each execution's plan in a second
// transaction inside the list's, while writes grow the database file (a small initial map, so
// that bbolt must remap, which waits for every open read transaction). The store's
// nested-transaction guard is off here so that the test sees what users saw (every request
// hanging) instead of the guard's abort. Every request must answer within 10 s.
func TestGrantFilteredListsDoNotWedgeTheStore(t *testing.T) {
	e := newEnv(t, func(c *server.Config) {
		c.StoreOptions = &bolt.Options{InitialMmapSize: 1 << 15, Unguarded: true}
	})
	ctx := context.Background()
	tenant := e.userTestTenant()
	plans := e.putPlans(tenant, 20, nil)
	executions := bolt.NewCollection(server.DBOf(e.srv), "executions", func() *svcv1.Execution { return &svcv1.Execution{} })
	now := timestamppb.Now()
	for i := range 200 {
		x := &svcv1.Execution{Id: id.New("exe"), PlanId: plans[i%len(plans)], PlanHash: strings.Repeat("ab", 32), PrincipalId: tenant.Owner,
			Status: svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED, CreatedAt: now, UpdatedAt: now}
		if err := executions.Put(ctx, tenant.String(), x.Id, x); err != nil {
			t.Fatal(err)
		}
	}

	stop := make(chan struct{})
	var writers sync.WaitGroup
	for w := range 2 { // grow the file: 256 KiB values, each in its own transaction
		writers.Go(func() {
			value := make([]byte, 256<<10)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := server.DBOf(e.srv).PutBlob(ctx, "wedge", fmt.Sprintf("%d-%d", w, i), value); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}

	url := e.ts.URL + "/v1/executions?limit=50&connection_id=" + e.creds.ConnectionID
	client := &http.Client{Timeout: 10 * time.Second}
	var readers sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	deadline := time.Now().Add(3 * time.Second)
	for range 8 {
		readers.Go(func() {
			for time.Now().Before(deadline) {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Header.Set("Authorization", "Bearer "+e.creds.TestAPIKey)
				res, err := client.Do(req)
				if err != nil {
					mu.Lock()
					failures = append(failures, err.Error())
					mu.Unlock()
					return
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					mu.Lock()
					failures = append(failures, res.Status)
					mu.Unlock()
					return
				}
			}
		})
	}
	readers.Wait()
	close(stop)
	if len(failures) > 0 {
		var dump strings.Builder
		pprof.Lookup("goroutine").WriteTo(&dump, 1)
		// A wedged store cannot be closed, and the test's cleanup would wait on it forever: end
		// the test binary here, with the evidence.
		fmt.Fprintf(os.Stderr, "--- FAIL: %s: lists under a connection failed while the file grew: %v\n\ngoroutines:\n%s",
			t.Name(), failures, dump.String())
		os.Exit(1)
	}
	writers.Wait()
}
