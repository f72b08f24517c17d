package server

import (
	"errors"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/server/internal/rpc"
	"svc.dev/svc/wire"
)

// route is one REST path of a method, from its google.api.http annotation.
type route struct {
	m    *method
	verb string
	path string   // "/v1/plans/{id}"
	body string   // "*", a field name, or "" for none
	vars []string // path variables, in order
}

var pathVar = regexp.MustCompile(`\{([a-z_]+)\}`)

// httpRule returns a method's REST route, or nil when it has none.
func httpRule(m *method) *route {
	rule, _ := proto.GetExtension(m.desc.Options(), annotations.E_Http).(*annotations.HttpRule)
	if rule == nil {
		return nil
	}
	r := &route{m: m, body: rule.GetBody()}
	switch p := rule.GetPattern().(type) {
	case *annotations.HttpRule_Get:
		r.verb, r.path = http.MethodGet, p.Get
	case *annotations.HttpRule_Post:
		r.verb, r.path = http.MethodPost, p.Post
	case *annotations.HttpRule_Put:
		r.verb, r.path = http.MethodPut, p.Put
	case *annotations.HttpRule_Patch:
		r.verb, r.path = http.MethodPatch, p.Patch
	case *annotations.HttpRule_Delete:
		r.verb, r.path = http.MethodDelete, p.Delete
	default:
		return nil
	}
	for _, v := range pathVar.FindAllStringSubmatch(r.path, -1) {
		r.vars = append(r.vars, v[1])
	}
	return r
}

// restRouter routes the spec's REST paths to the methods; anything else is a 404 or 405
// problem.
func (s *Server) restRouter() http.Handler {
	mux := http.NewServeMux()
	paths := http.NewServeMux() // path patterns without methods, to tell 405 from 404
	allowed := map[string][]string{}
	for _, m := range s.methods {
		r := httpRule(m)
		if r == nil {
			continue
		}
		mux.Handle(r.verb+" "+r.path, s.restHandler(r))
		if _, ok := allowed[r.path]; !ok {
			paths.Handle(r.path, http.NotFoundHandler())
		}
		allowed[r.path] = append(allowed[r.path], r.verb)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if !s.rateHeaders(w, r) {
			return
		}
		rid := rpc.RequestID(r.Context())
		if _, pattern := paths.Handler(r); pattern != "" {
			verbs := slices.Sorted(slices.Values(allowed[pattern]))
			w.Header().Set("Allow", strings.Join(verbs, ", "))
			rpc.Write(w, rid, rpc.NewProblem(http.StatusMethodNotAllowed, rpc.CodeMethodNotAllowed,
				r.Method+" is not allowed on "+r.URL.Path+"; allowed: "+strings.Join(verbs, ", ")+"."))
			return
		}
		rpc.Write(w, rid, rpc.NewProblem(http.StatusNotFound, rpc.CodeNotFound, "No endpoint at "+r.Method+" "+r.URL.Path+"."))
	})
	return mux
}

func (s *Server) restHandler(rt *route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in := incoming{header: r.Header, req: r, rest: true}
		out := s.invoke(r.Context(), rt.m, in, func() (proto.Message, error) { return s.decodeREST(rt, r) })
		s.writeREST(w, r, out)
	})
}

// decodeREST builds the request message from path variables, query parameters and the JSON
// body, strictly: unknown parameters and fields are validation errors.
func (s *Server) decodeREST(rt *route, r *http.Request) (proto.Message, error) {
	msg := newMessage(rt.m.desc.Input())
	md := msg.ProtoReflect().Descriptor()
	if rt.body != "" && r.Body != nil {
		data, err := io.ReadAll(r.Body)
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, rpc.NewProblem(http.StatusRequestEntityTooLarge, rpc.CodeTooLarge, "The request body is larger than the limit.")
		}
		if err != nil {
			return nil, rpc.NewProblem(http.StatusBadRequest, rpc.CodeValidation, "The request body could not be read.")
		}
		if len(strings.TrimSpace(string(data))) > 0 {
			if !isJSON(r.Header.Get("Content-Type")) {
				return nil, rpc.NewProblem(http.StatusUnsupportedMediaType, rpc.CodeMediaType, "The request body must be application/json.")
			}
			if err := decodeBody(rt, msg, data); err != nil {
				return nil, err
			}
		}
	}
	for _, v := range rt.vars {
		fd := md.Fields().ByName(protoreflect.Name(v))
		if fd == nil {
			return nil, rpc.NewProblem(http.StatusInternalServerError, rpc.CodeInternal, "route variable without field")
		}
		if err := wire.SetText(msg.ProtoReflect(), fd, r.PathValue(v)); err != nil {
			if fd.Kind() == protoreflect.EnumKind {
				// A path names a resource; a name outside the enumeration names nothing.
				return nil, rpc.NewProblem(http.StatusNotFound, rpc.CodeNotFound, "No "+v+" named "+strconv.Quote(r.PathValue(v))+".")
			}
			return nil, err
		}
	}
	for name, values := range r.URL.Query() {
		fd := wire.FieldByName(md, name)
		if fd == nil || (rt.body == "*" && !queryOnly(fd)) || slices.Contains(rt.vars, string(fd.Name())) ||
			(rt.body != "" && string(fd.Name()) == rt.body) {
			return nil, rpc.Invalid(name, "unknown query parameter")
		}
		if !fd.IsList() && len(values) > 1 {
			return nil, rpc.Invalid(name, "may be given once")
		}
		for _, v := range values {
			if err := wire.SetText(msg.ProtoReflect(), fd, v); err != nil {
				return nil, err
			}
		}
	}
	return msg, nil
}

// queryOnly reports whether a field is taken from the query string only, even when the body
// holds the rest of the request: connection_id, which the spec makes a query parameter.
func queryOnly(fd protoreflect.FieldDescriptor) bool { return fd.Name() == "connection_id" }

func decodeBody(rt *route, msg proto.Message, data []byte) error {
	if rt.body == "*" {
		if err := wire.Unmarshal(data, msg); err != nil {
			return err
		}
		if f := msg.ProtoReflect().Descriptor().Fields().ByName("connection_id"); f != nil && msg.ProtoReflect().Has(f) {
			return rpc.Invalid("connection_id", "is a query parameter, not a body field")
		}
		return nil
	}
	fd := msg.ProtoReflect().Descriptor().Fields().ByName(protoreflect.Name(rt.body))
	if fd == nil || fd.Message() == nil {
		return rpc.NewProblem(http.StatusInternalServerError, rpc.CodeInternal, "body field is not a message")
	}
	sub := msg.ProtoReflect().Mutable(fd).Message()
	return wire.Unmarshal(data, sub.Interface())
}

// writeREST renders an outcome as the spec's REST response.
func (s *Server) writeREST(w http.ResponseWriter, r *http.Request, out *outcome) {
	h := w.Header()
	for k, v := range out.header {
		h[k] = v
	}
	rid := rpc.RequestID(r.Context())
	if out.problem != nil {
		rpc.Write(w, rid, out.problem)
		return
	}
	switch {
	case out.status == http.StatusNoContent:
		w.WriteHeader(out.status)
		return
	case out.status >= 300 && out.status < 400:
		if red, ok := out.msg.(*svcv1.Redirect); ok {
			h.Set("Location", red.GetLocation())
		}
		w.WriteHeader(out.status)
		return
	}
	if out.stream != nil {
		defer out.stream.Close()
		if hb, ok := out.msg.(interface{ GetContentType() string }); ok {
			h.Set("Content-Type", hb.GetContentType())
		}
		w.WriteHeader(out.status)
		if _, err := io.Copy(w, out.stream); err != nil {
			// The content failed verification (or the client went away) mid-stream: abort the
			// response so that it cannot be mistaken for complete content.
			s.log.ErrorContext(r.Context(), "stream aborted", "request_id", rid, "err", err)
			panic(http.ErrAbortHandler)
		}
		return
	}
	if out.raw != nil {
		h.Set("Content-Type", "application/json")
		w.WriteHeader(out.status)
		w.Write(out.raw)
		return
	}
	// Encoded as it is written (a large plan's objects are not held twice, as a message and
	// as its JSON); a body under 64 KiB is written whole, so an encoding error can still be
	// answered with a problem.
	hw := &headerOnWrite{w: w, status: out.status}
	if written, err := wire.Write(hw, out.msg); err != nil {
		if written {
			s.log.ErrorContext(r.Context(), "response aborted", "request_id", rid, "err", err)
			panic(http.ErrAbortHandler)
		}
		s.log.ErrorContext(r.Context(), "encode response", "request_id", rid, "err", err)
		rpc.Write(w, rid, rpc.NewProblem(http.StatusInternalServerError, rpc.CodeInternal, "The server failed to encode the response."))
	}
}

// headerOnWrite sends a JSON response's header with its first write.
type headerOnWrite struct {
	w       http.ResponseWriter
	status  int
	started bool
}

func (h *headerOnWrite) Write(p []byte) (int, error) {
	if !h.started {
		h.started = true
		h.w.Header().Set("Content-Type", "application/json")
		h.w.WriteHeader(h.status)
	}
	return h.w.Write(p)
}

// isJSON reports whether a Content-Type names JSON.
func isJSON(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.TrimSpace(strings.ToLower(mt))
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}
