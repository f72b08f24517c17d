package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/server/internal/apidoc"
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
	"PlanService.AuthorizePlan": {http.StatusConflict: {codeInvalidState, codePlanStale}, http.StatusForbidden: {codeActionDenied, codeStepUpRequired}},
	"PlanService.CancelPlan":    {http.StatusConflict: {codeInvalidState}},
	"ExecutionService.ExecutePlan": {http.StatusConflict: {codeInvalidState, codePlanStale},
		http.StatusForbidden: {codeActionDenied, codeStepUpRequired}},
	"ExecutionService.CancelExecution": {http.StatusConflict: {codeInvalidState}},
	"AccountService.SignUp":            {http.StatusConflict: {codeConflict}},
	"AccountService.SignIn":            {http.StatusUnauthorized: {codeUnauthenticated}},
	"WebhookService.CreateWebhook":     {http.StatusConflict: {codeLimitReached}},
	"WebhookService.SendTestEvent":     {http.StatusConflict: {codeInvalidState}},
	"VaultService.GetVaultObjectContent": {http.StatusConflict: {codeInvalidState},
		http.StatusRequestEntityTooLarge: {codeTooLarge}},
	"VaultService.RestoreVaultObject":    {http.StatusConflict: {codeInvalidState}},
	"JobService.CancelJob":               {http.StatusConflict: {codeInvalidState}},
	"AccountService.ExportAccount":       {http.StatusConflict: {codeInvalidState, codeLimitReached}},
	"BillingService.CreatePortalSession": {http.StatusBadGateway: {codeInternal}},
	"IntelService.ActOnMeter":            {http.StatusConflict: {codeInvalidState}},
	"PlanService.CreatePlan":             {http.StatusConflict: {codeLimitReached}},
	"SourceService.CreateSource":         {http.StatusBadGateway: {codeProviderError}, http.StatusServiceUnavailable: {codeProviderDown}},
}

// problems returns the problem codes an operation can answer with, by HTTP status: those of
// the edge every request passes (validation, credentials, rate limit, deadline), those its
// shape implies (a body, an id, an Idempotency-Key, a provider behind it), and the ones its
// implementation adds (problemsByMethod).
func (r *route) problems() map[int][]string {
	m := r.m
	out := map[int][]string{
		http.StatusBadRequest:          {codeValidation},
		http.StatusTooManyRequests:     {codeRateLimited},
		http.StatusInternalServerError: {codeInternal},
		http.StatusServiceUnavailable:  {codeUnavailable},
	}
	add := func(status int, codes ...string) {
		for _, c := range codes {
			if !slices.Contains(out[status], c) {
				out[status] = append(out[status], c)
			}
		}
	}
	if !m.public() {
		add(http.StatusUnauthorized, codeUnauthenticated)
		add(http.StatusForbidden, codeForbidden)
	}
	if r.body != "" {
		add(http.StatusRequestEntityTooLarge, codeTooLarge)
		add(http.StatusUnsupportedMediaType, codeMediaType)
	}
	if len(r.vars) > 0 || m.endpoint.GetAddressedById() || namesResource(m.desc.Input()) {
		add(http.StatusNotFound, codeNotFound)
	}
	if m.endpoint.GetIdempotent() {
		add(http.StatusConflict, codeKeyReused, codeKeyInUse)
	}
	if m.endpoint.GetOperationClass() != "" {
		add(http.StatusBadGateway, codeProviderError)
		add(http.StatusServiceUnavailable, codeProviderDown)
	}
	if m.call == nil {
		add(http.StatusNotImplemented, codeNotImplemented)
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
