package rpc

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/platform"
)

// AuditSink keeps audit entries by tenant and id (storage.Batcher).
type AuditSink interface {
	Add(tenant, id string, e *svcv1.AuditEntry)
}

// Audit records what happens to a developer application: the changes its organization's
// members make, and the calls its keys make.
type Audit struct {
	Sink AuditSink
	Now  func() time.Time
}

// AuditTenant is the audit log's tenant of an application.
func AuditTenant(appID string) string { return "app:" + appID }

// Change records a change to an application made by the request's caller.
func (a Audit) Change(ctx context.Context, appID, action, target string, detail map[string]any) {
	c := From(ctx)
	d, _ := structpb.NewStruct(detail)
	e := &svcv1.AuditEntry{Id: id.New("aud"), Action: action, Target: proto.String(target), Detail: d, At: timestamppb.New(a.Now())}
	if c != nil {
		e.PrincipalId = proto.String(c.Actor().GetPrincipalId())
		if e.Detail == nil {
			e.Detail = &structpb.Struct{}
		}
		e.Detail.Fields["request_id"] = structpb.NewStringValue(c.RequestID)
	}
	a.Sink.Add(AuditTenant(appID), e.Id, e)
}

// Strings returns ss as a list value of an audit entry's detail.
func Strings(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// AppStream is the event stream of an application in a mode: what its keys of that mode read.
func AppStream(appID string, mode platform.Mode) string { return "app:" + appID + ":" + string(mode) }
