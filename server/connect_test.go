package server_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
)

// bearer adds a header to every Connect call.
type headerTransport struct {
	k, v string
	rt   http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.k, h.v)
	return h.rt.RoundTrip(r)
}

func (e *env) connectClient(k, v string) *http.Client {
	return &http.Client{Transport: headerTransport{k, v, http.DefaultTransport}}
}

func TestConnectMatchesREST(t *testing.T) {
	e := newEnv(t)
	stored := e.putPlans(e.userTestTenant(), 7, nil)
	slices.Reverse(stored)
	// gRPC needs HTTP/2: serve the same handler with unencrypted HTTP/2 too.
	h2 := httptest.NewUnstartedServer(e.srv.Handler())
	h2.Config.Protocols = new(http.Protocols)
	h2.Config.Protocols.SetHTTP1(true)
	h2.Config.Protocols.SetUnencryptedHTTP2(true)
	h2.Start()
	defer h2.Close()
	h2Transport := &http.Transport{Protocols: new(http.Protocols)}
	h2Transport.Protocols.SetUnencryptedHTTP2(true)
	for _, opt := range []struct {
		name string
		url  string
		rt   http.RoundTripper
		opts []connect.ClientOption
	}{
		{"connect", e.ts.URL, http.DefaultTransport, nil},
		{"grpc", h2.URL, h2Transport, []connect.ClientOption{connect.WithGRPC()}},
		{"grpc-web", e.ts.URL, http.DefaultTransport, []connect.ClientOption{connect.WithGRPCWeb()}},
	} {
		t.Run(opt.name, func(t *testing.T) {
			hc := &http.Client{Transport: headerTransport{"Authorization", "Bearer " + e.creds.TestAPIKey, opt.rt}}
			c := svcv1connect.NewPlanServiceClient(hc, opt.url, opt.opts...)
			var got []string
			req := &svcv1.ListPlansRequest{ConnectionId: proto.String(e.creds.ConnectionID), Limit: proto.Int32(3)}
			for {
				res, err := c.ListPlans(t.Context(), connect.NewRequest(req))
				if err != nil {
					t.Fatal(err)
				}
				if res.Header().Get("RateLimit-Limit") == "" {
					t.Error("Connect response lacks RateLimit headers")
				}
				for _, p := range res.Msg.Data {
					got = append(got, p.PlanId)
				}
				if res.Msg.NextCursor == nil {
					break
				}
				req.Cursor = res.Msg.NextCursor
			}
			if !slices.Equal(got, stored) {
				t.Fatalf("walked %v, want %v", got, stored)
			}
		})
	}
}

func TestConnectErrorsCarryTheProblem(t *testing.T) {
	e := newEnv(t)
	c := svcv1connect.NewPlanServiceClient(e.connectClient("Authorization", "Bearer "+e.creds.TestAPIKey), e.ts.URL)
	_, err := c.ListPlans(t.Context(), connect.NewRequest(&svcv1.ListPlansRequest{}))
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeInvalidArgument {
		t.Fatalf("got %v, want invalid_argument", err)
	}
	if ce.Meta().Get("RateLimit-Limit") == "" {
		t.Error("Connect error lacks RateLimit headers")
	}
	var found bool
	for _, d := range ce.Details() {
		v, err := d.Value()
		if p, ok := v.(*svcv1.Problem); ok && err == nil {
			found = true
			if p.Code != "validation_failed" || p.Status != 400 || len(p.Errors) != 1 || p.Errors[0].Path != "connection_id" {
				t.Errorf("problem detail: %v", p)
			}
		}
	}
	if !found {
		t.Error("Connect error has no Problem detail")
	}

	anon := svcv1connect.NewPlanServiceClient(http.DefaultClient, e.ts.URL)
	_, err = anon.ListPlans(t.Context(), connect.NewRequest(&svcv1.ListPlansRequest{}))
	if connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Fatalf("anonymous: %v", err)
	}
	// Creator revenue answers over Connect too (it was 501 before it was wired).
	cr := svcv1connect.NewCreatorServiceClient(e.connectClient("Authorization", "Bearer "+e.creds.TestAPIKey), e.ts.URL)
	if _, err = cr.ListAnomalies(t.Context(), connect.NewRequest(&svcv1.ListAnomaliesRequest{})); err != nil {
		t.Fatalf("creator anomalies over Connect: %v", err)
	}
}

// Connect's JSON is the API's wire format: the same bytes as REST.
func TestConnectJSONIsTheWireFormat(t *testing.T) {
	e := newEnv(t)
	e.putPlans(e.userTestTenant(), 2, nil)
	body := `{"connection_id":"` + e.creds.ConnectionID + `","limit":5}`
	req, _ := http.NewRequest("POST", e.ts.URL+svcv1connect.PlanServiceListPlansProcedure, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.creds.TestAPIKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	viaConnect, _ := io.ReadAll(res.Body)
	res.Body.Close()
	viaREST := e.do("GET", e.plansPath()+"&limit=5", "", e.key()...)
	if res.StatusCode != 200 || !bytes.Equal(viaConnect, viaREST.body) {
		t.Fatalf("Connect JSON (%d):\n%s\nREST:\n%s", res.StatusCode, viaConnect, viaREST.body)
	}
	// Connect unary GET works for methods without side effects.
	get, _ := http.NewRequest("GET", e.ts.URL+svcv1connect.PlanServiceListPlansProcedure+"?encoding=json&message="+
		strings.ReplaceAll(body, `"`, "%22"), nil)
	get.Header.Set("Authorization", "Bearer "+e.creds.TestAPIKey)
	res, err = http.DefaultClient.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	viaGet, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Equal(viaGet, viaREST.body) {
		t.Fatalf("Connect GET (%d): %s", res.StatusCode, viaGet)
	}
}

func TestConnectIdempotency(t *testing.T) {
	e := newEnv(t)
	cookie := e.signUp(t, "gus@example.com")
	c := svcv1connect.NewDeveloperServiceClient(e.connectClient("Cookie", cookie[1]), e.ts.URL)
	call := func(name string) (*connect.Response[svcv1.Organization], error) {
		req := connect.NewRequest(&svcv1.CreateOrganizationRequest{Name: name})
		req.Header().Set("Idempotency-Key", "connect-1")
		return c.CreateOrganization(t.Context(), req)
	}
	first, err := call("Acme")
	if err != nil {
		t.Fatal(err)
	}
	again, err := call("Acme")
	if err != nil {
		t.Fatal(err)
	}
	if again.Header().Get("Idempotent-Replayed") != "true" || !proto.Equal(first.Msg, again.Msg) {
		t.Fatalf("replay over Connect: %v %v", again.Header(), again.Msg)
	}
	// The same key over REST with the same request is the same request.
	r := e.do("POST", "/v1/developer/orgs", `{"name":"Acme"}`, with(cookie, "Idempotency-Key", "connect-1")...)
	if r.header.Get("Idempotent-Replayed") != "true" || r.json(t)["id"] != first.Msg.Id {
		t.Fatalf("REST replay of a Connect request: %s", r.body)
	}
	if _, err := call("Other"); connect.CodeOf(err) != connect.CodeAborted {
		t.Fatalf("reuse over Connect: %v", err)
	}
}
