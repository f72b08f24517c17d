package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"svc.dev/svc/plan"
	"svc.dev/svc/server/internal/rpc"
)

// A plan over its budget (an endless or enormous listing) is a clear 409 naming the budget,
// its limit and the source, not a 500 a client would retry.
func TestPlanBudgetIsAProblemNamingTheBudget(t *testing.T) {
	err := fmt.Errorf("build plan: %w", &plan.BudgetError{Budget: plan.BudgetObjects, Limit: 1000000, SourceID: "src_01JZ0000000000000000000000"})
	p := rpc.FromError(err)
	if p.Status != http.StatusConflict || p.Code != rpc.CodeLimitReached {
		t.Fatalf("problem %d %s, want 409 %s", p.Status, p.Code, rpc.CodeLimitReached)
	}
	for _, want := range []string{plan.BudgetObjects, "1000000", "src_01JZ0000000000000000000000"} {
		if !strings.Contains(p.Detail, want) {
			t.Errorf("detail %q does not name %q", p.Detail, want)
		}
	}
}
