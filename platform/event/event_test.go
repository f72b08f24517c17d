package event_test

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"svc.dev/svc/id"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/wire"
)

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, typ string
		want         bool
	}{
		{"*", "svc.plan.created", true},
		{"svc.plan.created", "svc.plan.created", true},
		{"svc.plan.created", "svc.plan.cancelled", false},
		{"svc.plan.*", "svc.plan.created", true},
		{"svc.plan.*", "svc.planet.created", false},
		{"svc.plan.*", "svc.plan", false},
		{"svc.vault.*", "svc.vault.object.committed", true},
		{"svc.*", "svc.webhook.test", true},
		{"svc.plan*", "svc.plan.created", false},
	} {
		if got := event.Match(c.pattern, c.typ); got != c.want {
			t.Errorf("Match(%q, %q) = %v", c.pattern, c.typ, got)
		}
	}
}

func TestValidPattern(t *testing.T) {
	for _, ok := range []string{"*", "svc.*", "svc.plan.*", "svc.vault.object.*", "svc.execution.completed", "svc.webhook.test"} {
		if err := event.ValidPattern(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "svc.plna.created", "svc.plan*", "svc.*.created", "other.*", "**", "svc.plan.created.*"} {
		if err := event.ValidPattern(bad); !errors.Is(err, event.ErrUnknownType) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestCatalogue(t *testing.T) {
	name := regexp.MustCompile(`^svc(\.[a-z_]+)+$`)
	for _, in := range event.Catalogue() {
		if !name.MatchString(in.Type) || in.Source == "" || in.Family == "" || in.Description == "" {
			t.Errorf("entry %+v", in)
		}
	}
	for _, family := range []string{"svc.plan.", "svc.execution.", "svc.receipt.", "svc.job.", "svc.source.", "svc.vault.", "svc.meter.",
		"svc.trial.", "svc.creator.anomaly.", "svc.usage.", "svc.webhook."} {
		found := false
		for _, in := range event.Catalogue() {
			found = found || strings.HasPrefix(in.Type, family)
		}
		if !found {
			t.Errorf("no %s* type", family)
		}
	}
}

// docs/webhooks.md lists every type of the catalogue, and no other.
func TestCatalogueIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/webhooks.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(svc\\.[a-z_.]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	for _, in := range event.Catalogue() {
		if !documented[in.Type] {
			t.Errorf("docs/webhooks.md does not list %s", in.Type)
		}
		delete(documented, in.Type)
	}
	for typ := range documented {
		t.Errorf("docs/webhooks.md lists %s, which is not in the catalogue", typ)
	}
}

func TestNew(t *testing.T) {
	at := time.Date(2026, 11, 22, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
	exe := id.NewAt("exe", at)
	ev, err := event.New(event.ExecutionCompleted, exe, map[string]any{"execution_id": exe, "assets": 3}, true, at)
	if err != nil {
		t.Fatal(err)
	}
	j, err := wire.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"specversion":"1.0","id":"` + ev.GetId() + `","source":"/v1/executions","type":"svc.execution.completed",` +
		`"time":"2026-11-22T11:00:00.123Z","subject":"` + exe + `","datacontenttype":"application/json",` +
		`"data":{"assets":3,"execution_id":"` + exe + `"},"svcsimulated":true}`
	if string(j) != want {
		t.Errorf("wire JSON\n got %s\nwant %s", j, want)
	}
	if !id.Valid("evt", ev.GetId()) {
		t.Errorf("id %q", ev.GetId())
	}
	for _, c := range []struct{ typ, subject string }{
		{"svc.nope", exe},
		{event.ExecutionCompleted, ""},
		{event.ExecutionCompleted, id.NewAt("pln", at)},
	} {
		if _, err := event.New(c.typ, c.subject, nil, false, at); err == nil {
			t.Errorf("New(%q, %q) accepted", c.typ, c.subject)
		}
	}
	if _, err := event.New(event.UsageCeilingReached, id.NewAt("org", at), map[string]any{"x": make(chan int)}, false, at); err == nil {
		t.Error("data that is not JSON accepted")
	}
}
