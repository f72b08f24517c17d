package svc

import (
	"testing"

	"svc.dev/svc/providers"
)

func TestTouchesPlan(t *testing.T) {
	expected := map[string]string{"a": "v1", "b": ""}
	obj := func(v string) *providers.Object { return &providers.Object{Version: v} }
	cases := []struct {
		name    string
		changes []providers.Change
		want    bool
	}{
		{"nothing", nil, false},
		{"another object, any change", []providers.Change{{Type: providers.ChangeDelete, ObjectID: "z"}, {Type: providers.ChangeUpsert, ObjectID: "y", Object: obj("v9")}}, false},
		{"a planned object at its expected version", []providers.Change{{Type: providers.ChangeUpsert, ObjectID: "a", Object: obj("v1")}}, false},
		{"a planned object at another version", []providers.Change{{Type: providers.ChangeUpsert, ObjectID: "a", Object: obj("v2")}}, true},
		{"a planned object deleted", []providers.Change{{Type: providers.ChangeDelete, ObjectID: "a"}}, true},
		{"a planned object without an expected version, changed", []providers.Change{{Type: providers.ChangeUpsert, ObjectID: "b", Object: obj("v7")}}, false},
		{"a planned object without an expected version, deleted", []providers.Change{{Type: providers.ChangeDelete, ObjectID: "b"}}, true},
		{"an upsert without its object", []providers.Change{{Type: providers.ChangeUpsert, ObjectID: "a"}}, true},
	}
	for _, c := range cases {
		if got := touchesPlan(c.changes, expected); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
