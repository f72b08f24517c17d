package platformapi

import (
	"context"
	"net/http"
	"slices"

	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/platform"
	"svc.dev/svc/server/internal/rpc"
)

func applicationProto(a *platform.Application) *svcv1.Application {
	return &svcv1.Application{Id: a.ID, OrgId: a.OrgID, Name: a.Name, OperationClasses: rpc.OpEnums(a.OperationClasses),
		RedirectUris: rpc.NonNil(a.RedirectURIs), CreatedAt: timestamppb.New(a.CreatedAt)}
}

func keyProto(k *platform.APIKey, secret string) *svcv1.ApiKey {
	out := &svcv1.ApiKey{Id: k.ID, ApplicationId: k.AppID, Mode: svcv1.KeyMode(rpc.EnumNumber(svcv1.KeyMode(0).Descriptor(), string(k.Mode))),
		Scopes: rpc.OpEnums(k.Scopes), Last4: k.Last4, CreatedAt: timestamppb.New(k.CreatedAt)}
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
func memberOf(c *rpc.Caller, orgID string) error {
	if c.User == nil || !slices.Contains(c.User.OrgIDs, orgID) {
		return rpc.NewProblem(http.StatusNotFound, rpc.CodeNotFound, "The organization does not exist.")
	}
	return nil
}

// application returns an application the caller may see: its organization's members, or a
// key of the application itself.
func (a *API) application(ctx context.Context, c *rpc.Caller, appID string) (*platform.Application, error) {
	app, err := a.Devs.Application(ctx, appID)
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

func (a *API) createApplication(ctx context.Context, req *svcv1.CreateApplicationRequest) (*svcv1.Application, error) {
	c := rpc.From(ctx)
	if err := memberOf(c, req.GetOrgId()); err != nil {
		return nil, err
	}
	app, err := a.Devs.CreateApplication(ctx, req.GetOrgId(), req.GetName(), rpc.OpClasses(req.GetOperationClasses()), req.GetRedirectUris())
	if err != nil {
		return nil, err
	}
	a.Audit.Change(ctx, app.ID, "application.created", app.ID, map[string]any{"name": app.Name, "operation_classes": rpc.Strings(app.OperationClasses)})
	return applicationProto(app), nil
}

func (a *API) listApplications(ctx context.Context, req *svcv1.ListApplicationsRequest) (*svcv1.ListApplicationsResponse, error) {
	c := rpc.From(ctx)
	if err := memberOf(c, req.GetOrgId()); err != nil {
		return nil, err
	}
	apps, err := a.Devs.Applications(ctx, req.GetOrgId())
	if err != nil {
		return nil, err
	}
	after, limit, binding, err := a.Pager.Start(ctx, svcv1connect.DeveloperServiceListApplicationsProcedure, req)
	if err != nil {
		return nil, err
	}
	data, next := rpc.NewestFirst(a.Pager, apps, func(x *platform.Application) string { return x.ID }, applicationProto, after, limit, binding)
	return &svcv1.ListApplicationsResponse{Data: data, NextCursor: next}, nil
}

func (a *API) getApplication(ctx context.Context, req *svcv1.GetApplicationRequest) (*svcv1.Application, error) {
	app, err := a.application(ctx, rpc.From(ctx), req.GetId())
	if err != nil {
		return nil, err
	}
	return applicationProto(app), nil
}

func (a *API) createKey(ctx context.Context, req *svcv1.CreateKeyRequest) (*svcv1.ApiKey, error) {
	c := rpc.From(ctx)
	app, err := a.application(ctx, c, req.GetId())
	if err != nil {
		return nil, err
	}
	var scopes []string
	if len(req.GetScopes()) > 0 {
		scopes = rpc.OpClasses(req.GetScopes())
	}
	k, secret, err := a.Devs.CreateKey(ctx, app.ID, platform.Mode(rpc.EnumWire(req.GetMode())), scopes)
	if err != nil {
		return nil, err
	}
	a.Audit.Change(ctx, app.ID, "key.created", k.ID, map[string]any{"mode": string(k.Mode), "scopes": rpc.Strings(k.Scopes)})
	return keyProto(k, secret), nil
}

func (a *API) listKeys(ctx context.Context, req *svcv1.ListKeysRequest) (*svcv1.ListKeysResponse, error) {
	app, err := a.application(ctx, rpc.From(ctx), req.GetId())
	if err != nil {
		return nil, err
	}
	keys, err := a.Devs.Keys(ctx, app.ID)
	if err != nil {
		return nil, err
	}
	out := &svcv1.ListKeysResponse{Data: []*svcv1.ApiKey{}}
	for i := len(keys) - 1; i >= 0; i-- {
		out.Data = append(out.Data, keyProto(keys[i], ""))
	}
	return out, nil
}

func (a *API) rotateKey(ctx context.Context, req *svcv1.KeyRequest) (*svcv1.ApiKey, error) {
	app, err := a.application(ctx, rpc.From(ctx), req.GetId())
	if err != nil {
		return nil, err
	}
	k, secret, err := a.Devs.RotateKey(ctx, app.ID, req.GetKeyId())
	if err != nil {
		return nil, err
	}
	a.Audit.Change(ctx, app.ID, "key.rotated", req.GetKeyId(), map[string]any{"replacement": k.ID, "old_key_valid_for_hours": platform.KeyOverlap.Hours()})
	return keyProto(k, secret), nil
}

func (a *API) revokeKey(ctx context.Context, req *svcv1.KeyRequest) (*svcv1.ApiKey, error) {
	app, err := a.application(ctx, rpc.From(ctx), req.GetId())
	if err != nil {
		return nil, err
	}
	k, err := a.Devs.RevokeKey(ctx, app.ID, req.GetKeyId())
	if err != nil {
		return nil, err
	}
	a.Audit.Change(ctx, app.ID, "key.revoked", k.ID, nil)
	return keyProto(k, ""), nil
}

func (a *API) listApplicationAudit(ctx context.Context, req *svcv1.ListApplicationAuditRequest) (*svcv1.ListApplicationAuditResponse, error) {
	c := rpc.From(ctx)
	app, err := a.application(ctx, c, req.GetId())
	if err != nil {
		return nil, err
	}
	a.AuditFlush()
	after, limit, binding, err := a.Pager.Start(ctx, svcv1connect.DeveloperServiceListApplicationAuditProcedure, req)
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
	page, err := a.AuditLog.List(ctx, rpc.AuditTenant(app.ID), after, limit, keep)
	if err != nil {
		return nil, err
	}
	return &svcv1.ListApplicationAuditResponse{Data: rpc.NonNil(page.Items), NextCursor: a.Pager.Next(binding, page.Last)}, nil
}
