package plugin

import (
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/internal/pluginpb"
)

// The protocol's enums number the values of the Go enumerations in their
// listed order, from 1; 0 is UNSPECIFIED.

var (
	roles = []providers.PermissionRole{providers.RoleOwner, providers.RoleWriter, providers.RoleCommenter, providers.RoleReader, providers.RoleUnknown}
	ptype = []providers.PermissionType{providers.PrincipalUser, providers.PrincipalGroup, providers.PrincipalDomain, providers.PrincipalAnyone, providers.PrincipalLink, providers.PrincipalUnknown}
	ctype = []providers.ChangeType{providers.ChangeUpsert, providers.ChangeDelete}
	wmode = []providers.WriteMode{providers.WriteCopy, providers.WriteMove, providers.WriteRestore}
)

func toEnum[E ~int32, T comparable](list []T, v T) E {
	return E(slices.Index(list, v) + 1) // 0 (UNSPECIFIED) when absent
}

func fromEnum[T any, E ~int32](list []T, e E) T {
	var zero T
	if e <= 0 || int(e) > len(list) {
		return zero
	}
	return list[e-1]
}

func mapSlice[T, U any](in []T, f func(T) U) []U {
	if len(in) == 0 {
		return nil
	}
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

func toTime(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func fromTime(ts *timestamppb.Timestamp) time.Time {
	if ts == nil {
		return time.Time{}
	}
	return ts.AsTime()
}

func descriptionToProto(d providers.Description) *pluginpb.DescribeResponse {
	return &pluginpb.DescribeResponse{
		Name:            string(d.Name),
		ProtocolVersion: uint32(d.ProtocolVersion),
		DisplayName:     d.DisplayName,
		OperationClasses: mapSlice(d.OperationClasses, func(c providers.OperationClass) pluginpb.OperationClass {
			return toEnum[pluginpb.OperationClass](providers.OperationClasses, c)
		}),
		Capabilities: mapSlice(d.Capabilities, func(c providers.Capability) pluginpb.Capability {
			return toEnum[pluginpb.Capability](providers.Capabilities, c)
		}),
		ObjectKinds: mapSlice(d.ObjectKinds, func(k providers.Kind) pluginpb.ObjectKind { return toEnum[pluginpb.ObjectKind](providers.Kinds, k) }),
		MarkerKinds: mapSlice(d.MarkerKinds, func(k providers.MarkerKind) pluginpb.MarkerKind {
			return toEnum[pluginpb.MarkerKind](providers.MarkerKinds, k)
		}),
	}
}

func descriptionFromProto(m *pluginpb.DescribeResponse) providers.Description {
	return providers.Description{
		Name:            providers.Name(m.GetName()),
		ProtocolVersion: int(m.GetProtocolVersion()),
		DisplayName:     m.GetDisplayName(),
		OperationClasses: mapSlice(m.GetOperationClasses(), func(e pluginpb.OperationClass) providers.OperationClass {
			return fromEnum(providers.OperationClasses, e)
		}),
		Capabilities: mapSlice(m.GetCapabilities(), func(e pluginpb.Capability) providers.Capability { return fromEnum(providers.Capabilities, e) }),
		ObjectKinds:  mapSlice(m.GetObjectKinds(), func(e pluginpb.ObjectKind) providers.Kind { return fromEnum(providers.Kinds, e) }),
		MarkerKinds:  mapSlice(m.GetMarkerKinds(), func(e pluginpb.MarkerKind) providers.MarkerKind { return fromEnum(providers.MarkerKinds, e) }),
	}
}

func markerToProto(m providers.Marker) *pluginpb.Marker {
	if m.IsZero() {
		return nil
	}
	return &pluginpb.Marker{Kind: toEnum[pluginpb.MarkerKind](providers.MarkerKinds, m.Kind), Value: m.Value}
}

func markerFromProto(m *pluginpb.Marker) providers.Marker {
	if m == nil {
		return providers.Marker{}
	}
	return providers.Marker{Kind: fromEnum(providers.MarkerKinds, m.GetKind()), Value: m.GetValue()}
}

func objectToProto(o *providers.Object) *pluginpb.Object {
	m := &pluginpb.Object{
		Id:         o.ID,
		ParentId:   o.ParentID,
		Version:    o.Version,
		Kind:       toEnum[pluginpb.ObjectKind](providers.Kinds, o.Kind),
		Name:       o.Name,
		Path:       o.Path,
		SizeBytes:  o.SizeBytes,
		Sha256:     o.SHA256,
		MimeType:   o.MIMEType,
		Containers: o.Containers,
		CreatedAt:  toTime(o.CreatedAt),
		ModifiedAt: toTime(o.ModifiedAt),
		Starred:    o.Starred,
		Shared:     o.Shared,
		Metadata:   o.Metadata,
	}
	if h := o.Message; h != nil {
		m.Message = &pluginpb.MessageHeaders{
			From:                h.From,
			To:                  h.To,
			Cc:                  h.Cc,
			Subject:             h.Subject,
			Date:                toTime(h.Date),
			ThreadId:            h.ThreadID,
			ListId:              h.ListID,
			ListUnsubscribe:     h.ListUnsubscribe,
			ListUnsubscribePost: h.ListUnsubscribePost,
			Snippet:             h.Snippet,
		}
	}
	for _, p := range o.Permissions {
		m.Permissions = append(m.Permissions, &pluginpb.Permission{
			Principal: p.Principal,
			Role:      toEnum[pluginpb.PermissionRole](roles, p.Role),
			Type:      toEnum[pluginpb.PermissionType](ptype, p.Type),
		})
	}
	return m
}

func objectFromProto(m *pluginpb.Object) providers.Object {
	o := providers.Object{
		ID:         m.GetId(),
		ParentID:   m.GetParentId(),
		Version:    m.GetVersion(),
		Kind:       fromEnum(providers.Kinds, m.GetKind()),
		Name:       m.GetName(),
		Path:       m.GetPath(),
		SizeBytes:  m.GetSizeBytes(),
		SHA256:     m.GetSha256(),
		MIMEType:   m.GetMimeType(),
		Containers: m.GetContainers(),
		CreatedAt:  fromTime(m.GetCreatedAt()),
		ModifiedAt: fromTime(m.GetModifiedAt()),
		Starred:    m.GetStarred(),
		Shared:     m.GetShared(),
		Metadata:   m.GetMetadata(),
	}
	if h := m.GetMessage(); h != nil {
		o.Message = &providers.MessageHeaders{
			From:                h.GetFrom(),
			To:                  h.GetTo(),
			Cc:                  h.GetCc(),
			Subject:             h.GetSubject(),
			Date:                fromTime(h.GetDate()),
			ThreadID:            h.GetThreadId(),
			ListID:              h.GetListId(),
			ListUnsubscribe:     h.GetListUnsubscribe(),
			ListUnsubscribePost: h.GetListUnsubscribePost(),
			Snippet:             h.GetSnippet(),
		}
	}
	for _, p := range m.GetPermissions() {
		o.Permissions = append(o.Permissions, providers.Permission{
			Principal: p.GetPrincipal(),
			Role:      fromEnum(roles, p.GetRole()),
			Type:      fromEnum(ptype, p.GetType()),
		})
	}
	return o
}

func changeToProto(c *providers.Change) *pluginpb.Change {
	m := &pluginpb.Change{Type: toEnum[pluginpb.ChangeType](ctype, c.Type), ObjectId: c.ObjectID}
	if c.Object != nil {
		m.Object = objectToProto(c.Object)
	}
	return m
}

func changeFromProto(m *pluginpb.Change) providers.Change {
	c := providers.Change{Type: fromEnum(ctype, m.GetType()), ObjectID: m.GetObjectId()}
	if m.GetObject() != nil {
		o := objectFromProto(m.GetObject())
		c.Object = &o
	}
	return c
}

func quotaToProto(q providers.Quota) *pluginpb.QuotaResponse {
	return &pluginpb.QuotaResponse{
		UsedBytes:  q.UsedBytes,
		LimitBytes: q.LimitBytes,
		TrashBytes: q.TrashBytes,
		Breakdown:  q.Breakdown,
		ObservedAt: timestamppb.New(q.ObservedAt),
	}
}

func quotaFromProto(m *pluginpb.QuotaResponse) providers.Quota {
	return providers.Quota{
		UsedBytes:  m.GetUsedBytes(),
		LimitBytes: m.GetLimitBytes(),
		TrashBytes: m.GetTrashBytes(),
		Breakdown:  m.GetBreakdown(),
		ObservedAt: fromTime(m.GetObservedAt()),
	}
}

func writeHeaderToProto(id uint64, r providers.WriteRequest) *pluginpb.WriteHeader {
	return &pluginpb.WriteHeader{
		InstanceId: id,
		SourceRef:  r.SourceRef,
		Path:       r.Path,
		Kind:       toEnum[pluginpb.ObjectKind](providers.Kinds, r.Kind),
		MimeType:   r.MIMEType,
		SizeBytes:  r.SizeBytes,
		Sha256:     r.SHA256,
		Mode:       toEnum[pluginpb.WriteMode](wmode, r.Mode),
		Overwrite:  r.Overwrite,
		Metadata:   r.Metadata,
	}
}

func writeHeaderFromProto(m *pluginpb.WriteHeader) providers.WriteRequest {
	return providers.WriteRequest{
		SourceRef: m.GetSourceRef(),
		Path:      m.GetPath(),
		Kind:      fromEnum(providers.Kinds, m.GetKind()),
		MIMEType:  m.GetMimeType(),
		SizeBytes: m.GetSizeBytes(),
		SHA256:    m.GetSha256(),
		Mode:      fromEnum(wmode, m.GetMode()),
		Overwrite: m.GetOverwrite(),
		Metadata:  m.GetMetadata(),
	}
}
