package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/server/internal/apidoc"
	"svc.dev/svc/server/internal/rpc"
)

// openAPIDocument generates the OpenAPI 3.1 document of the REST surface (apidoc.OpenAPI)
// from the routed methods: their routes, credentials and the problems each answers with.
func (s *Server) openAPIDocument() ([]byte, error) {
	known := map[string]bool{}
	var ops []apidoc.Operation
	for _, m := range s.methods {
		known[string(m.desc.Parent().Name())+"."+string(m.desc.Name())] = true
		r := httpRule(m)
		if r == nil {
			continue
		}
		ops = append(ops, apidoc.Operation{Method: m.desc, Verb: r.verb, Path: r.path, Body: r.body, Vars: r.vars,
			Success: m.successStatus(), Problems: r.problems(),
			APIKey:           !m.public() && m.accepts(svcv1.Credential_CREDENTIAL_API_KEY),
			Session:          !m.public() && m.accepts(svcv1.Credential_CREDENTIAL_SESSION),
			ConnectionScoped: m.endpoint.GetConnectionScoped(), Idempotent: m.endpoint.GetIdempotent()})
	}
	for name := range problemsByMethod {
		if !known[name] {
			return nil, fmt.Errorf("openapi: problemsByMethod names %s, which is no method", name)
		}
	}
	return apidoc.OpenAPI(ops, s.cfg.BaseURL)
}

// problemsByMethod are the codes a method answers beyond those its shape implies (see
// problems), from its implementation: keep it in step when a handler gains a problem.
var problemsByMethod = map[string]map[int][]string{
	"PlanService.AuthorizePlan": {http.StatusConflict: {rpc.CodeInvalidState, rpc.CodePlanStale}, http.StatusForbidden: {rpc.CodeActionDenied, rpc.CodeStepUpRequired}},
	"PlanService.CancelPlan":    {http.StatusConflict: {rpc.CodeInvalidState}},
	"ExecutionService.ExecutePlan": {http.StatusConflict: {rpc.CodeInvalidState, rpc.CodePlanStale},
		http.StatusForbidden: {rpc.CodeActionDenied, rpc.CodeStepUpRequired}},
	"ExecutionService.CancelExecution": {http.StatusConflict: {rpc.CodeInvalidState}},
	"AccountService.SignUp":            {http.StatusConflict: {rpc.CodeConflict}},
	"AccountService.SignIn":            {http.StatusUnauthorized: {rpc.CodeUnauthenticated}},
	"WebhookService.CreateWebhook":     {http.StatusConflict: {rpc.CodeLimitReached}},
	"WebhookService.SendTestEvent":     {http.StatusConflict: {rpc.CodeInvalidState}},
	"VaultService.GetVaultObjectContent": {http.StatusConflict: {rpc.CodeInvalidState},
		http.StatusRequestEntityTooLarge: {rpc.CodeTooLarge}},
	"VaultService.RestoreVaultObject":    {http.StatusConflict: {rpc.CodeInvalidState}},
	"JobService.CancelJob":               {http.StatusConflict: {rpc.CodeInvalidState}},
	"AccountService.ExportAccount":       {http.StatusConflict: {rpc.CodeInvalidState, rpc.CodeLimitReached}},
	"BillingService.CreatePortalSession": {http.StatusBadGateway: {rpc.CodeInternal}},
	"IntelService.ActOnMeter":            {http.StatusConflict: {rpc.CodeInvalidState}},
	"PlanService.CreatePlan":             {http.StatusConflict: {rpc.CodeLimitReached}},
	"SourceService.CreateSource":         {http.StatusBadGateway: {rpc.CodeProviderError}, http.StatusServiceUnavailable: {rpc.CodeProviderDown}},
}

// problems returns the problem codes an operation can answer with, by HTTP status: those of
// the edge every request passes (validation, credentials, rate limit, deadline), those its
// shape implies (a body, an id, an Idempotency-Key, a provider behind it), and the ones its
// implementation adds (problemsByMethod).
func (r *route) problems() map[int][]string {
	m := r.m
	out := map[int][]string{
		http.StatusBadRequest:          {rpc.CodeValidation},
		http.StatusTooManyRequests:     {rpc.CodeRateLimited},
		http.StatusInternalServerError: {rpc.CodeInternal},
		http.StatusServiceUnavailable:  {rpc.CodeUnavailable},
	}
	add := func(status int, codes ...string) {
		for _, c := range codes {
			if !slices.Contains(out[status], c) {
				out[status] = append(out[status], c)
			}
		}
	}
	if !m.public() {
		add(http.StatusUnauthorized, rpc.CodeUnauthenticated)
		add(http.StatusForbidden, rpc.CodeForbidden)
	}
	if r.body != "" {
		add(http.StatusRequestEntityTooLarge, rpc.CodeTooLarge)
		add(http.StatusUnsupportedMediaType, rpc.CodeMediaType)
	}
	if len(r.vars) > 0 || m.endpoint.GetAddressedById() || namesResource(m.desc.Input()) {
		add(http.StatusNotFound, rpc.CodeNotFound)
	}
	if m.endpoint.GetIdempotent() {
		add(http.StatusConflict, rpc.CodeKeyReused, rpc.CodeKeyInUse)
	}
	if m.endpoint.GetOperationClass() != "" {
		add(http.StatusBadGateway, rpc.CodeProviderError)
		add(http.StatusServiceUnavailable, rpc.CodeProviderDown)
	}
	if m.call == nil {
		add(http.StatusNotImplemented, rpc.CodeNotImplemented)
	}
	name := string(m.desc.Parent().Name()) + "." + string(m.desc.Name())
	for st, codes := range problemsByMethod[name] {
		add(st, codes...)
	}
	for _, codes := range out {
		slices.Sort(codes)
	}
	return out
}

// namesResource reports whether a request names another resource by id (id, *_id, *_ids:
// a connection, an organization, sources), which is 404 when it does not exist or is not the
// caller's.
func namesResource(md protoreflect.MessageDescriptor) bool {
	for i := range md.Fields().Len() {
		n := string(md.Fields().Get(i).Name())
		if n == "id" || strings.HasSuffix(n, "_id") || strings.HasSuffix(n, "_ids") {
			return true
		}
	}
	return false
}
func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	if !s.rateHeaders(w, r) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(s.openapi)
}
