package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"svc.dev/svc/server/devseed"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"svc.dev/svc/client"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/server"
)

// exampleServer starts an in-process server seeded like svc serve --dev and returns its URL,
// test key and connection; in a real program these come from your deployment.
func exampleServer() (url, key, connection string, stop func()) {
	dir, err := os.MkdirTemp("", "svc-example")
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(server.Config{DataDir: dir, Password: platform.PasswordParams{Memory: 64, Time: 1, Threads: 1}})
	if err != nil {
		log.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	creds, err := srv.Seed(context.Background(), ts.URL, &devseed.Options{NoExecution: true})
	if err != nil {
		log.Fatal(err)
	}
	return ts.URL, creds.TestAPIKey, creds.ConnectionID, func() { ts.Close(); srv.Close(); os.RemoveAll(dir) }
}

// Call the hosted API with a test key acting through a connection: a plan over the seeded
// sources, the plans listed page by page, and an error read from its problem document.
func Example() {
	url, key, connection, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	c, err := client.New(url, client.APIKey(key), &client.Options{ConnectionID: connection})
	if err != nil {
		log.Fatal(err)
	}
	// CreatePlan is idempotent: the client sends an Idempotency-Key and may retry it safely.
	p, err := c.Plans.CreatePlan(ctx, connect.NewRequest(&svcv1.CreatePlanRequest{Intent: svcv1.PlanIntent_PLAN_INTENT_SVC}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("plan:", p.Msg.GetState(), len(p.Msg.GetHash()), "hex digits of hash")

	n := 0
	for _, err := range c.ListPlans(ctx, &svcv1.ListPlansRequest{Limit: proto.Int32(1)}) {
		if err != nil {
			log.Fatal(err)
		}
		n++
	}
	fmt.Println("plans listed:", n)

	_, err = c.Plans.AuthorizePlan(ctx, connect.NewRequest(&svcv1.AuthorizePlanRequest{Id: p.Msg.GetPlanId(), PlanHash: "0000000000000000000000000000000000000000000000000000000000000000"}))
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println("authorize with a wrong hash:", e.Status, e.Code)
	}
	// Output:
	// plan: PLAN_STATE_VALIDATED 64 hex digits of hash
	// plans listed: 1
	// authorize with a wrong hash: 409 plan_stale
}

// Verify a webhook delivery in your receiver, before decoding it.
func ExampleVerifyWebhook() {
	body := []byte(`[{"specversion":"1.0","id":"evt_01JD8Y5Q6R7S8T9V0W1X2Y3Z4C","type":"svc.webhook.test"}]`)
	// In a receiver: header := r.Header.Get(client.WebhookSignatureHeader); body, _ := io.ReadAll(r.Body)
	now := time.Now()
	header := signForExample(now, body, "whsec_example")

	err := client.VerifyWebhook(header, body, now, "whsec_example")
	fmt.Println("genuine:", err == nil)
	err = client.VerifyWebhook(header, []byte(`[]`), now, "whsec_example")
	fmt.Println("altered:", errors.Is(err, client.ErrWebhookSignatureMismatch))
	// Output:
	// genuine: true
	// altered: true
}
