package providers_test

import (
	"context"
	"fmt"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/simulated"
)

// A registry is built in one place and injected; here with the simulated
// provider in process.
func ExampleRegistry() {
	reg := providers.NewRegistry()
	reg.Register(providers.InProcess(simulated.Description, simulated.New))
	defer reg.Close()

	ctx := context.Background()
	p, err := reg.Open(ctx, providers.Simulated, providers.Config{"seed": "1", "objects": "3"})
	if err != nil {
		panic(err)
	}
	page, err := p.List(ctx, providers.ListRequest{SourceRef: "mail"})
	if err != nil {
		panic(err)
	}
	for _, o := range page.Objects {
		fmt.Println(o.ID, o.Kind)
	}
	fmt.Println(page.Marker.Kind, page.Marker.Value)
	if t, ok := providers.AsTrasher(p); ok {
		res, _ := t.Trash(ctx, providers.ActionRequest{SourceRef: "mail", ObjectID: page.Objects[0].ID, ExpectedVersion: page.Objects[0].Version})
		fmt.Println("trashed, restorable:", res.Restorable)
	}
	// Output:
	// msg-00000000 message
	// msg-00000001 message
	// msg-00000002 message
	// history_id 0
	// trashed, restorable: true
}
