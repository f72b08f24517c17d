package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"svc.dev/svc/plan"
)

// A plan over its budget (an endless or enormous listing) is a clear 409 naming the budget,
// its limit and the source, not a 500 a client would retry.
func TestPlanBudgetIsAProblemNamingTheBudget(t *testing.T) {
	err := fmt.Errorf("build plan: %w", &plan.BudgetError{Budget: plan.BudgetObjects, Limit: 1000000, SourceID: "src_01JZ0000000000000000000000"})
	p := toProblem(err)
	if p.status != http.StatusConflict || p.code != codeLimitReached {
		t.Fatalf("problem %d %s, want 409 %s", p.status, p.code, codeLimitReached)
	}
	for _, want := range []string{plan.BudgetObjects, "1000000", "src_01JZ0000000000000000000000"} {
		if !strings.Contains(p.detail, want) {
			t.Errorf("detail %q does not name %q", p.detail, want)
		}
	}
}
