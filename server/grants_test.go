package server_test

import (
	"context"
	"slices"
	"testing"

	"svc.dev/svc/platform"
)

// Every operation class an endpoint needs is enforced: a connection whose grant lacks it, or
// a key whose scopes lack it, is refused with 403; with it, the call gets past the check.
func TestGrantsEnforcedForEveryOperationClass(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	devs := e.srv.Developers()
	calls := map[string][2]string{ // operation class -> method, path (after ?connection_id=)
		"discover": {"GET", "/v1/plans?connection_id="},
		"preserve": {"GET", "/v1/vault/objects?connection_id="},
		"restore":  {"POST", "/v1/vault/objects/vlt_01JD0000000000000000000000/restore?connection_id="},
		"monitor":  {"GET", "/v1/intel/meters?connection_id="},
	}
	for op, call := range calls {
		t.Run(op, func(t *testing.T) {
			var others []string
			for _, o := range platform.OperationClasses {
				if o != op {
					others = append(others, o)
				}
			}
			without, err := devs.Connect(ctx, e.creds.ApplicationID, e.creds.UserID, platform.ModeTest, platform.Grant{OperationClasses: others})
			if err != nil {
				t.Fatal(err)
			}
			body := ""
			if call[0] == "POST" {
				body = "{}"
			}
			checkProblem(t, e.do(call[0], call[1]+without.ID, body, e.key()...), 403, "forbidden")

			_, narrowKey, err := devs.CreateKey(ctx, e.creds.ApplicationID, platform.ModeTest, others)
			if err != nil {
				t.Fatal(err)
			}
			checkProblem(t, e.do(call[0], call[1]+e.creds.ConnectionID, body, "Authorization", "Bearer "+narrowKey), 403, "forbidden")

			// With the class, the call gets past the grant (to its own answer: 200, 404 or 501).
			r := e.do(call[0], call[1]+e.creds.ConnectionID, body, e.key()...)
			if r.status == 403 || !slices.Contains([]int{200, 201, 404, 501}, r.status) {
				t.Fatalf("with the grant: %d %s", r.status, r.body)
			}
		})
	}
}
