package vendorfake_test

import (
	"testing"

	"svc.dev/svc/internal/vendorfake"
)

// TestCheck: the checker refuses what Gmail's discovery document does not
// allow, so the fakes' shape tests can fail.
func TestCheck(t *testing.T) {
	doc, err := vendorfake.LoadDiscovery("gmail/v1/gmail-api.json")
	if err != nil {
		t.Fatal(err)
	}
	for body, bad := range map[string]bool{
		`{"id":"a","historyId":"12","sizeEstimate":3,"labelIds":["INBOX"],"payload":{"headers":[{"name":"A","value":"b"}]}}`: false,
		`{"id":"a","historyID":"12"}`:                    true, // not a field
		`{"id":"a","historyId":12}`:                      true, // uint64 travels as a string
		`{"id":"a","sizeEstimate":"3"}`:                  true, // int32 is a number
		`{"id":"a","labelIds":"INBOX"}`:                  true,
		`{"id":"a","payload":{"headers":[{"nom":"A"}]}}`: true,
		`{"id":"a","payload":{"body":{"size":1.5}}}`:     true,
	} {
		got := doc.Check("Message", []byte(body))
		if (len(got) > 0) != bad {
			t.Errorf("%s: problems %v, want bad=%v", body, got, bad)
		}
	}
}
