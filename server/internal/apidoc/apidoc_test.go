package apidoc

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// The embedded descriptors carry the protos' comments, found by full name.
func TestComment(t *testing.T) {
	for name, want := range map[string]string{
		"svc.v1.PlanService.CreatePlan": "CreatePlan builds a plan",
		"svc.v1.Endpoint.idempotent":    "idempotent marks an IDEM endpoint",
		"svc.v1.Credential":             "Credential is a kind of credential",
	} {
		if got := Comment(protoreflect.FullName(name)); !strings.HasPrefix(got, want) {
			t.Errorf("%s: %q, want it to start %q", name, got, want)
		}
	}
	if _, err := comments(); err != nil {
		t.Fatal(err)
	}
	if got := Comment("svc.v1.NoSuchThing"); got != "" {
		t.Errorf("a missing name has comment %q", got)
	}
}
