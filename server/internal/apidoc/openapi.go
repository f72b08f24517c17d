package apidoc

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/wire"
)

// obj is a JSON object under construction; encoding/json writes its keys sorted, so the
// document is byte-for-byte stable.
type obj = map[string]any

// Operation is one REST operation of the API, as the server routes and answers it.
type Operation struct {
	Method     protoreflect.MethodDescriptor
	Verb, Path string
	// Body is "*" (the request's fields but the path's), a field name, or "" for none.
	Body string
	// Vars are the path's variables, in order.
	Vars []string
	// Success is the status of a success.
	Success int
	// APIKey and Session say which credentials the operation accepts (neither: public).
	APIKey, Session bool
	// ConnectionScoped: a developer key acts on an end user's data through connection_id.
	ConnectionScoped bool
	Idempotent       bool
	// Problems are the problem codes the operation answers with, by status.
	Problems map[int][]string
}

// OpenAPI generates the OpenAPI 3.1 document of the REST surface from the same descriptors
// the router and the codec use: the operations the server routes (from google.api.http),
// schemas from the messages with the codec's naming, nullability and enum strings, and
// constraints from the protovalidate rules. baseURL, when set, is the server's public address.
func OpenAPI(ops []Operation, baseURL string) ([]byte, error) {
	g := &openAPIGen{schemas: obj{}, responses: obj{}}
	paths := obj{}
	routes := slices.Clone(ops)
	slices.SortFunc(routes, func(a, b Operation) int { return strings.Compare(a.Path+a.Verb, b.Path+b.Verb) })
	var tags []any
	seen := map[string]bool{}
	for _, r := range routes {
		svc := r.Method.Parent()
		if name := string(svc.Name()); !seen[name] {
			seen[name] = true
			d := comment(svc)
			if d == "" {
				d = "The operations of " + name + "."
			}
			tags = append(tags, obj{"name": name, "description": d})
		}
	}
	slices.SortFunc(tags, func(a, b any) int { return strings.Compare(a.(obj)["name"].(string), b.(obj)["name"].(string)) })
	for _, r := range routes {
		item, _ := paths[r.Path].(obj)
		if item == nil {
			item = obj{}
			paths[r.Path] = item
		}
		item[strings.ToLower(r.Verb)] = g.operation(r)
	}
	g.schemas["Problem"] = g.messageSchema((&svcv1.Problem{}).ProtoReflect().Descriptor())
	for path, op := range signedDownloads() {
		paths[path] = obj{"get": op}
	}
	server := obj{"url": "/", "description": "The server that serves this document."}
	if baseURL != "" {
		server = obj{"url": strings.TrimRight(baseURL, "/"), "description": "This server's public address."}
	}
	doc := obj{
		"openapi": "3.1.0",
		"info": obj{
			"title":   "svc API",
			"version": "v1",
			"description": "The data-lifecycle service: plans, executions, receipts, manifests, vault, intelligence, creator revenue and the developer platform. " +
				"Errors are RFC 9457 problem documents (application/problem+json); each operation lists the statuses and codes it can answer with.",
			"license": obj{"name": "Proprietary", "identifier": "LicenseRef-svc"},
		},
		"servers": []any{server},
		"tags":    tags,
		"paths":   paths,
		"components": obj{
			"schemas":   g.schemas,
			"responses": g.responses,
			"securitySchemes": obj{
				"apiKey": obj{"type": "http", "scheme": "bearer", "description": "A developer API key, sk_test_... (isolated test tenant) or sk_live_... (metered), in Authorization: Bearer. " +
					"On operations that take connection_id, a key acts on an end user's data only through that connection's grant."},
				"session": obj{"type": "apiKey", "in": "cookie", "name": "svc_session", "description": "An end user's session cookie, set by sign-in. Header Svc-Mode: test acts on the user's test tenant."},
			},
			"headers": obj{
				"RateLimit-Limit":     obj{"schema": obj{"type": "integer"}, "description": "Requests allowed per window."},
				"RateLimit-Remaining": obj{"schema": obj{"type": "integer"}, "description": "Requests left now."},
				"RateLimit-Reset":     obj{"schema": obj{"type": "integer"}, "description": "Seconds until the allowance is full again."},
				"Retry-After":         obj{"schema": obj{"type": "integer"}, "description": "Seconds to wait before sending the request again."},
			},
		},
	}
	return json.MarshalIndent(doc, "", "  ")
}

type openAPIGen struct{ schemas, responses obj }

// problemResponse names a shared response for a status and its codes ("Conflict_invalid_state_plan_stale"),
// defining it on first use: operations with the same codes share one.
func (g *openAPIGen) problemResponse(status int, codes []string) string {
	name := strings.ReplaceAll(strings.ReplaceAll(http.StatusText(status), " ", ""), "-", "") + "_" + strings.Join(codes, "_")
	if _, ok := g.responses[name]; ok {
		return name
	}
	headers := rateHeaders
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		headers = obj{"Retry-After": obj{"$ref": "#/components/headers/Retry-After"}}
		for k, v := range rateHeaders {
			headers[k] = v
		}
	}
	var enum []any
	for _, c := range codes {
		enum = append(enum, c)
	}
	g.responses[name] = obj{
		"description": http.StatusText(status) + ": a problem (RFC 9457) with code " + strings.Join(codes, ", ") + ".",
		"headers":     headers,
		"content": obj{"application/problem+json": obj{"schema": obj{"allOf": []any{
			obj{"$ref": "#/components/schemas/Problem"},
			obj{"type": "object", "properties": obj{"code": obj{"type": "string", "enum": enum}}},
		}}}},
	}
	return name
}

var rateHeaders = obj{
	"RateLimit-Limit":     obj{"$ref": "#/components/headers/RateLimit-Limit"},
	"RateLimit-Remaining": obj{"$ref": "#/components/headers/RateLimit-Remaining"},
	"RateLimit-Reset":     obj{"$ref": "#/components/headers/RateLimit-Reset"},
}

func (g *openAPIGen) operation(r Operation) obj {
	md := r.Method
	in := md.Input()
	op := obj{
		"operationId": string(md.Parent().Name()) + "_" + string(md.Name()),
		"tags":        []string{string(md.Parent().Name())},
	}
	op["summary"], op["description"] = summarize(md)
	var params []any
	for _, v := range r.Vars {
		fd := in.Fields().ByName(protoreflect.Name(v))
		params = append(params, obj{"name": v, "in": "path", "required": true, "schema": g.fieldSchema(fd, false)})
	}
	{
		for i := range in.Fields().Len() {
			fd := in.Fields().Get(i)
			if slices.Contains(r.Vars, string(fd.Name())) || (r.Body != "" && fd.Name() != "connection_id") {
				continue
			}
			p := obj{"name": wire.JSONName(fd), "in": "query", "schema": g.fieldSchema(fd, false)}
			if fd.IsList() {
				p["style"], p["explode"] = "form", false
			}
			if rules := fieldRules(fd); rules.GetRequired() || rules.GetString().GetMinLen() > 0 {
				p["required"] = true
			}
			if fd.Name() == "connection_id" && r.ConnectionScoped {
				p["description"] = "Required when authenticating with a developer API key."
			}
			params = append(params, p)
		}
	}
	if r.Idempotent {
		params = append(params, obj{"name": "Idempotency-Key", "in": "header", "schema": obj{"type": "string", "maxLength": 255},
			"description": "Replays the first response for 24 hours; reuse with another body is 409 idempotency_key_reused."})
	}
	if params != nil {
		op["parameters"] = params
	}
	switch r.Body {
	case "":
	case "*":
		skip := r.Vars
		if in.Fields().ByName("connection_id") != nil {
			skip = append(slices.Clone(skip), "connection_id")
		}
		op["requestBody"] = obj{"content": obj{"application/json": obj{"schema": g.bodySchema(in, skip)}}}
	default:
		fd := in.Fields().ByName(protoreflect.Name(r.Body))
		op["requestBody"] = obj{"required": true, "content": obj{"application/json": obj{"schema": g.ref(fd.Message())}}}
	}
	status := r.Success
	success := obj{"description": "Success.", "headers": rateHeaders}
	switch {
	case status == http.StatusNoContent:
	case status >= 300 && status < 400:
		h := obj{"Location": obj{"schema": obj{"type": "string"}}}
		for k, v := range rateHeaders {
			h[k] = v
		}
		success["headers"] = h
	case md.Output().FullName() == "google.api.HttpBody":
		success["content"] = obj{"*/*": obj{"schema": obj{"type": "string", "format": "binary"}}}
	default:
		success["content"] = obj{"application/json": obj{"schema": g.ref(md.Output())}}
	}
	responses := obj{strconv.Itoa(status): success}
	for st, codes := range r.Problems {
		responses[strconv.Itoa(st)] = obj{"$ref": "#/components/responses/" + g.problemResponse(st, codes)}
	}
	op["responses"] = responses
	var sec []any
	if r.APIKey {
		sec = append(sec, obj{"apiKey": []string{}})
	}
	if r.Session {
		sec = append(sec, obj{"session": []string{}})
	}
	if sec == nil {
		sec = []any{}
	}
	op["security"] = sec
	return op
}

// summarize returns an operation's summary and description from its method's proto comment:
// the comment is the description, and its first clause, without the method's own name, the
// summary ("CreatePlan builds a plan: ..." is "Builds a plan").
func summarize(md protoreflect.MethodDescriptor) (string, string) {
	desc := comment(md)
	first, _, _ := strings.Cut(desc, "\n")
	for _, sep := range []string{". ", ": ", "; ", " ("} {
		if i := strings.Index(first, sep); i > 0 {
			first = first[:i]
		}
	}
	first = strings.TrimSuffix(first, ".")
	if rest, ok := strings.CutPrefix(first, string(md.Name())+" "); ok {
		first = rest
	}
	if first == "" {
		first = splitCamel(string(md.Name()))
	}
	first = strings.ToUpper(first[:1]) + first[1:]
	if desc == "" {
		desc = first + "."
	}
	return first, desc
}

// splitCamel turns "ListPlanObjects" into "List plan objects".
func splitCamel(name string) string {
	var b strings.Builder
	for i, r := range name {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte(' ')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// bodySchema is a request message as a body: the message without its path variables.
func (g *openAPIGen) bodySchema(md protoreflect.MessageDescriptor, vars []string) any {
	if len(vars) == 0 {
		return g.ref(md)
	}
	sch := g.objectSchema(md, vars)
	delete(sch, "required")
	return sch
}

// ref names a message's schema, generating it on first use.
func (g *openAPIGen) ref(md protoreflect.MessageDescriptor) obj {
	switch md.FullName() {
	case timestampName, structName, valueName, listValueName:
		return g.wellKnown(md)
	}
	name := string(md.Name())
	if md.Parent() != nil {
		if parent, ok := md.Parent().(protoreflect.MessageDescriptor); ok {
			name = string(parent.Name()) + "_" + name
		}
	}
	if md.FullName() == "google.protobuf.Empty" {
		name = "Empty"
	}
	if _, ok := g.schemas[name]; !ok {
		g.schemas[name] = obj{} // placeholder against recursion
		g.schemas[name] = g.messageSchema(md)
	}
	return obj{"$ref": "#/components/schemas/" + name}
}

const (
	timestampName protoreflect.FullName = "google.protobuf.Timestamp"
	structName    protoreflect.FullName = "google.protobuf.Struct"
	valueName     protoreflect.FullName = "google.protobuf.Value"
	listValueName protoreflect.FullName = "google.protobuf.ListValue"
)

func (g *openAPIGen) wellKnown(md protoreflect.MessageDescriptor) obj {
	switch md.FullName() {
	case timestampName:
		return obj{"type": "string", "format": "date-time"}
	case structName:
		return obj{"type": "object"}
	case listValueName:
		return obj{"type": "array"}
	}
	return obj{}
}

func (g *openAPIGen) messageSchema(md protoreflect.MessageDescriptor) obj {
	return g.objectSchema(md, nil)
}

// objectSchema: every field is always present on the wire (unset ones as null), except
// those marked omit_unset, so all others are required.
func (g *openAPIGen) objectSchema(md protoreflect.MessageDescriptor, skip []string) obj {
	props := obj{}
	var required []string
	for i := range md.Fields().Len() {
		fd := md.Fields().Get(i)
		if slices.Contains(skip, string(fd.Name())) {
			continue
		}
		name := wire.JSONName(fd)
		omit, _ := proto.GetExtension(fd.Options(), svcv1.E_OmitUnset).(bool)
		mustBeSet := fieldRules(fd).GetRequired()
		nullable := !fd.IsList() && !fd.IsMap() && !omit && !mustBeSet &&
			(fd.HasPresence() || fd.Kind() == protoreflect.EnumKind)
		props[name] = g.fieldSchema(fd, nullable)
		if !omit {
			required = append(required, name)
		}
	}
	sch := obj{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		sch["required"] = required
	}
	if d := comment(md); d != "" {
		sch["description"] = d
	}
	return sch
}

// comment is a descriptor's proto comment: generated Go descriptors carry none, so it comes
// from the descriptors scripts/generate embeds here (svc.binpb).
func comment(d protoreflect.Descriptor) string {
	if c := strings.TrimSpace(d.ParentFile().SourceLocations().ByDescriptor(d).LeadingComments); c != "" {
		return c
	}
	return Comment(d.FullName())
}

func fieldRules(fd protoreflect.FieldDescriptor) *validate.FieldRules {
	r, _ := proto.GetExtension(fd.Options(), validate.E_Field).(*validate.FieldRules)
	return r
}

func (g *openAPIGen) fieldSchema(fd protoreflect.FieldDescriptor, nullable bool) any {
	rules := fieldRules(fd)
	switch {
	case fd.IsList():
		items := g.singularSchema(fd, rules.GetRepeated().GetItems())
		sch := obj{"type": "array", "items": items}
		if n := rules.GetRepeated().GetMinItems(); n > 0 {
			sch["minItems"] = n
		}
		return sch
	case fd.IsMap():
		return obj{"type": "object", "additionalProperties": g.singularSchema(fd.MapValue(), nil)}
	}
	sch := g.singularSchema(fd, rules)
	if !nullable {
		return sch
	}
	if fd.Kind() == protoreflect.MessageKind {
		return obj{"anyOf": []any{sch, obj{"type": "null"}}}
	}
	sch["type"] = []string{sch["type"].(string), "null"}
	if e, ok := sch["enum"].([]any); ok {
		sch["enum"] = append(e, nil)
	}
	return sch
}

func (g *openAPIGen) singularSchema(fd protoreflect.FieldDescriptor, rules *validate.FieldRules) obj {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return g.ref(fd.Message())
	case protoreflect.EnumKind:
		var vals []any
		for _, v := range wire.EnumValues(fd.Enum()) {
			vals = append(vals, v)
		}
		return obj{"type": "string", "enum": vals}
	case protoreflect.BoolKind:
		return obj{"type": "boolean"}
	case protoreflect.StringKind:
		sch := obj{"type": "string"}
		sr := rules.GetString()
		if sr.HasPattern() {
			sch["pattern"] = sr.GetPattern()
		}
		if sr.HasMinLen() {
			sch["minLength"] = sr.GetMinLen()
		}
		if sr.HasMaxLen() {
			sch["maxLength"] = sr.GetMaxLen()
		}
		if sr.HasConst() {
			sch["const"] = sr.GetConst()
		}
		if sr.GetEmail() {
			sch["format"] = "email"
		}
		if sr.GetUri() {
			sch["format"] = "uri"
		}
		return sch
	case protoreflect.BytesKind:
		return obj{"type": "string", "contentEncoding": "base64"}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		sch := obj{"type": "number"}
		if dr := rules.GetDouble(); dr != nil {
			if dr.HasGte() {
				sch["minimum"] = dr.GetGte()
			}
			if dr.HasLte() {
				sch["maximum"] = dr.GetLte()
			}
		}
		return sch
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		sch := obj{"type": "integer", "format": "int32"}
		if ir := rules.GetInt32(); ir != nil {
			if ir.HasGte() {
				sch["minimum"] = ir.GetGte()
			}
			if ir.HasLte() {
				sch["maximum"] = ir.GetLte()
			}
		}
		return sch
	}
	sch := obj{"type": "integer", "format": "int64"}
	if ir := rules.GetInt64(); ir != nil {
		if ir.HasGte() {
			sch["minimum"] = ir.GetGte()
		}
		if ir.HasLte() {
			sch["maximum"] = ir.GetLte()
		}
	}
	return sch
}

// signedDownloads documents the routes served outside the RPC table, authenticated by a signed,
// expiring URL that an RPC returned: the account export archive and svc's own billing portal.
func signedDownloads() map[string]obj {
	problem := obj{"application/problem+json": obj{"schema": obj{"$ref": "#/components/schemas/Problem"}}}
	q := func(name, desc string) obj {
		return obj{"name": name, "in": "query", "required": true, "schema": obj{"type": "string"}, "description": desc}
	}
	denied := obj{"description": "The URL is not valid or has expired.", "content": problem, "headers": rateHeaders}
	return map[string]obj{
		"/v1/exports/{id}/archive": {
			"summary":     "Download an account export archive (the URL is in the finished export job's result)",
			"operationId": "DownloadExportArchive",
			"security":    []any{}, // the signed URL is the credential
			"parameters": []any{
				obj{"name": "id", "in": "path", "required": true, "schema": obj{"type": "string", "pattern": "^job_[0-9A-HJKMNP-TV-Z]{26}$"}},
				q("expires", "Unix seconds; the URL is refused after it."), q("sig", "The URL's signature."),
			},
			"responses": obj{
				"200": obj{"description": "The archive (tar.gz).", "headers": rateHeaders, "content": obj{"application/gzip": obj{"schema": obj{"type": "string", "format": "binary"}}}},
				"206": obj{"description": "The requested range of the archive.", "headers": rateHeaders, "content": obj{"application/gzip": obj{"schema": obj{"type": "string", "format": "binary"}}}},
				"304": obj{"description": "Not modified."},
				"403": denied,
				"404": obj{"description": "The archive is no longer kept.", "content": problem, "headers": rateHeaders},
				"416": obj{"description": "The range is not satisfiable.", "content": obj{"text/plain": obj{"schema": obj{"type": "string"}}}},
				"429": obj{"description": "Rate limited.", "content": problem, "headers": rateHeaders},
			},
		},
		"/v1/billing/portal/page": {
			"summary":     "svc's own billing portal page, when no payment processor is configured (the URL comes from POST /v1/billing/portal)",
			"operationId": "BillingPortalPage",
			"security":    []any{}, // the signed URL is the credential
			"parameters":  []any{q("org", "The organization."), q("expires", "Unix seconds; the URL is refused after it."), q("sig", "The URL's signature.")},
			"responses": obj{
				"200": obj{"description": "A static HTML page.", "headers": rateHeaders, "content": obj{"text/html": obj{"schema": obj{"type": "string"}}}},
				"403": denied,
				"404": obj{"description": "The organization does not exist.", "content": problem, "headers": rateHeaders},
				"429": obj{"description": "Rate limited.", "content": problem, "headers": rateHeaders},
			},
		},
	}
}
