package server

import (
	"context"
	"net/http"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/id"
	"svc.dev/svc/platform"
	"svc.dev/svc/server/internal/rpc"
	"svc.dev/svc/wire"
)

func opClasses(ops []svcv1.OperationClass) []string {
	out := make([]string, 0, len(ops))
	for _, op := range ops {
		out = append(out, rpc.EnumWire(op))
	}
	return out
}

func opEnums(ops []string) []svcv1.OperationClass {
	out := make([]svcv1.OperationClass, 0, len(ops))
	for _, op := range ops {
		out = append(out, svcv1.OperationClass(rpc.EnumNumber(svcv1.OperationClass(0).Descriptor(), op)))
	}
	return out
}

func applicationProto(a *platform.Application) *svcv1.Application {
	return &svcv1.Application{Id: a.ID, OrgId: a.OrgID, Name: a.Name, OperationClasses: opEnums(a.OperationClasses),
		RedirectUris: rpc.NonNil(a.RedirectURIs), CreatedAt: timestamppb.New(a.CreatedAt)}
}

func keyProto(k *platform.APIKey, secret string) *svcv1.ApiKey {
	out := &svcv1.ApiKey{Id: k.ID, ApplicationId: k.AppID, Mode: svcv1.KeyMode(rpc.EnumNumber(svcv1.KeyMode(0).Descriptor(), string(k.Mode))),
		Scopes: opEnums(k.Scopes), Last4: k.Last4, CreatedAt: timestamppb.New(k.CreatedAt)}
	if k.ExpiresAt != nil {
		out.ExpiresAt = timestamppb.New(*k.ExpiresAt)
	}
	if k.RevokedAt != nil {
		out.RevokedAt = timestamppb.New(*k.RevokedAt)
	}
	if secret != "" {
		out.Secret = &secret
	}
	return out
}

// memberOf answers 404 unless the signed-in user belongs to the organization (no existence
// oracle for other organizations).
func memberOf(c *Caller, orgID string) error {
	if c.User == nil || !slices.Contains(c.User.OrgIDs, orgID) {
		return rpc.NewProblem(http.StatusNotFound, rpc.CodeNotFound, "The organization does not exist.")
	}
	return nil
}

// application returns an application the caller may see: its organization's members, or a
// key of the application itself.
func (s *Server) application(ctx context.Context, c *Caller, appID string) (*platform.Application, error) {
	app, err := s.devs.Application(ctx, appID)
	if err != nil {
		return nil, err
	}
	if c.Key != nil {
		if c.Key.AppID != app.ID {
			return nil, platform.ErrNotFound
		}
		return app, nil
	}
	if err := memberOf(c, app.OrgID); err != nil {
		return nil, platform.ErrNotFound
	}
	return app, nil
}

func (s *Server) createApplication(ctx context.Context, req *svcv1.CreateApplicationRequest) (*svcv1.Application, error) {
	c := rpc.From(ctx)
	if err := memberOf(c, req.GetOrgId()); err != nil {
		return nil, err
	}
	app, err := s.devs.CreateApplication(ctx, req.GetOrgId(), req.GetName(), opClasses(req.GetOperationClasses()), req.GetRedirectUris())
	if err != nil {
		return nil, err
	}
	s.auditChange(ctx, app.ID, "application.created", app.ID, map[string]any{"name": app.Name, "operation_classes": toAny(app.OperationClasses)})
	return applicationProto(app), nil
}

func (s *Server) listApplications(ctx context.Context, req *svcv1.ListApplicationsRequest) (*svcv1.ListApplicationsResponse, error) {
	c := rpc.From(ctx)
	if err := memberOf(c, req.GetOrgId()); err != nil {
		return nil, err
	}
	apps, err := s.devs.Applications(ctx, req.GetOrgId())
	if err != nil {
		return nil, err
	}
	after, limit, binding, err := s.pager.Start(ctx, svcv1connect.DeveloperServiceListApplicationsProcedure, req)
	if err != nil {
		return nil, err
	}
	slices.Reverse(apps) // newest first
	out := &svcv1.ListApplicationsResponse{Data: []*svcv1.Application{}}
	started := after == ""
	for _, a := range apps {
		if !started {
			started = a.ID == after
			continue
		}
		if len(out.Data) == limit {
			out.NextCursor = s.pager.Next(binding, out.Data[len(out.Data)-1].Id)
			break
		}
		out.Data = append(out.Data, applicationProto(a))
	}
	return out, nil
}

func (s *Server) getApplication(ctx context.Context, req *svcv1.GetApplicationRequest) (*svcv1.Application, error) {
	app, err := s.application(ctx, rpc.From(ctx), req.GetId())
	if err != nil {
		return nil, err
	}
	return applicationProto(app), nil
}

func (s *Server) createKey(ctx context.Context, req *svcv1.CreateKeyRequest) (*svcv1.ApiKey, error) {
	c := rpc.From(ctx)
	app, err := s.application(ctx, c, req.GetId())
	if err != nil {
		return nil, err
	}
	var scopes []string
	if len(req.GetScopes()) > 0 {
		scopes = opClasses(req.GetScopes())
	}
	k, secret, err := s.devs.CreateKey(ctx, app.ID, platform.Mode(rpc.EnumWire(req.GetMode())), scopes)
	if err != nil {
		return nil, err
	}
	s.auditChange(ctx, app.ID, "key.created", k.ID, map[string]any{"mode": string(k.Mode), "scopes": toAny(k.Scopes)})
	return keyProto(k, secret), nil
}

func (s *Server) listKeys(ctx context.Context, req *svcv1.ListKeysRequest) (*svcv1.ListKeysResponse, error) {
	app, err := s.application(ctx, rpc.From(ctx), req.GetId())
	if err != nil {
		return nil, err
	}
	keys, err := s.devs.Keys(ctx, app.ID)
	if err != nil {
		return nil, err
	}
	out := &svcv1.ListKeysResponse{Data: []*svcv1.ApiKey{}}
	for i := len(keys) - 1; i >= 0; i-- {
		out.Data = append(out.Data, keyProto(keys[i], ""))
	}
	return out, nil
}

func (s *Server) rotateKey(ctx context.Context, req *svcv1.KeyRequest) (*svcv1.ApiKey, error) {
	app, err := s.application(ctx, rpc.From(ctx), req.GetId())
	if err != nil {
		return nil, err
	}
	k, secret, err := s.devs.RotateKey(ctx, app.ID, req.GetKeyId())
	if err != nil {
		return nil, err
	}
	s.auditChange(ctx, app.ID, "key.rotated", req.GetKeyId(), map[string]any{"replacement": k.ID, "old_key_valid_for_hours": platform.KeyOverlap.Hours()})
	return keyProto(k, secret), nil
}

func (s *Server) revokeKey(ctx context.Context, req *svcv1.KeyRequest) (*svcv1.ApiKey, error) {
	app, err := s.application(ctx, rpc.From(ctx), req.GetId())
	if err != nil {
		return nil, err
	}
	k, err := s.devs.RevokeKey(ctx, app.ID, req.GetKeyId())
	if err != nil {
		return nil, err
	}
	s.auditChange(ctx, app.ID, "key.revoked", k.ID, nil)
	return keyProto(k, ""), nil
}

func (s *Server) listApplicationAudit(ctx context.Context, req *svcv1.ListApplicationAuditRequest) (*svcv1.ListApplicationAuditResponse, error) {
	c := rpc.From(ctx)
	app, err := s.application(ctx, c, req.GetId())
	if err != nil {
		return nil, err
	}
	s.audit.Flush()
	after, limit, binding, err := s.pager.Start(ctx, svcv1connect.DeveloperServiceListApplicationAuditProcedure, req)
	if err != nil {
		return nil, err
	}
	var keep func(*svcv1.AuditEntry) bool
	if c.Key != nil && c.Key.Mode != platform.ModeLive {
		// A test key reads only the calls made in test mode.
		keep = func(e *svcv1.AuditEntry) bool {
			return e.GetDetail().GetFields()["mode"].GetStringValue() == string(platform.ModeTest)
		}
	}
	page, err := s.auditLog.List(ctx, auditTenant(app.ID), after, limit, keep)
	if err != nil {
		return nil, err
	}
	return &svcv1.ListApplicationAuditResponse{Data: rpc.NonNil(page.Items), NextCursor: s.pager.Next(binding, page.Last)}, nil
}

func auditTenant(appID string) string { return "app:" + appID }

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// auditChange records a change to an application made by a signed-in user.
func (s *Server) auditChange(ctx context.Context, appID, action, target string, detail map[string]any) {
	c := rpc.From(ctx)
	d, _ := structpb.NewStruct(detail)
	e := &svcv1.AuditEntry{Id: id.New("aud"), Action: action, Target: proto.String(target), Detail: d, At: timestamppb.New(s.cfg.Now())}
	if c != nil {
		e.PrincipalId = proto.String(c.Actor().GetPrincipalId())
		if e.Detail == nil {
			e.Detail = &structpb.Struct{}
		}
		e.Detail.Fields["request_id"] = structpb.NewStringValue(c.RequestID)
	}
	s.audit.Add(auditTenant(appID), e.Id, e)
}

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
	s.audit.Add(auditTenant(c.Key.AppID), e.Id, e)
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
