package server

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/server/internal/rpc"
	"svc.dev/svc/wire"
)

// auditCall records a call made with an application's key: who, what (the procedure and the
// REST route), on which resource, and how it ended.
func (s *Server) auditCall(m *method, in incoming, req proto.Message, out *outcome, c *Caller) {
	detail := map[string]any{"status": float64(out.status), "request_id": c.RequestID, "mode": string(c.Key.Mode)}
	if in.req != nil {
		detail["http_method"], detail["path"] = in.req.Method, in.req.URL.Path
	}
	if c.Connection != nil {
		detail["connection_id"] = c.Connection.ID
	}
	if out.problem != nil {
		detail["code"] = out.problem.Code
	}
	if out.replayed {
		detail["idempotent_replayed"] = true
	}
	d, _ := structpb.NewStruct(detail)
	e := &svcv1.AuditEntry{Id: id.New("aud"), PrincipalId: proto.String(c.Key.ID), Action: m.procedure[1:], Detail: d, At: timestamppb.New(s.cfg.Now())}
	if t := auditTarget(req, out.msg); t != "" {
		e.Target = &t
	}
	s.audit.Add(rpc.AuditTenant(c.Key.AppID), e.Id, e)
}

// auditTarget is the resource a call acted on: the request's id, else the id of what it made.
func auditTarget(msgs ...proto.Message) string {
	for _, m := range msgs {
		if m == nil {
			continue
		}
		md := m.ProtoReflect().Descriptor()
		for _, name := range []string{"id", "plan_id", "planId"} {
			if fd := wire.FieldByName(md, name); fd != nil && fd.Kind() == protoreflect.StringKind {
				if v := m.ProtoReflect().Get(fd).String(); v != "" {
					return v
				}
			}
		}
	}
	return ""
}
