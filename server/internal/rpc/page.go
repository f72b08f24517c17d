package rpc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"google.golang.org/protobuf/proto"

	"svc.dev/svc/platform"
)

// Page sizes of every list.
const (
	DefaultPageSize = 50
	MaxPageSize     = 200
)

// PageRequest is what every list request has.
type PageRequest interface {
	proto.Message
	GetLimit() int32
	GetCursor() string
}

// Pager reads and issues list cursors.
type Pager struct{ Cursors *platform.Cursors }

// Start reads limit and cursor. The cursor is bound to the caller, the tenant, the procedure
// and the filters (every other field of the request), so a cursor from another listing, or
// an altered one, is a validation error.
func (p Pager) Start(ctx context.Context, procedure string, req PageRequest) (after string, limit int, binding string, err error) {
	limit = int(req.GetLimit())
	if limit == 0 {
		limit = DefaultPageSize
	}
	limit = min(limit, MaxPageSize)
	filters := proto.Clone(req)
	fields := filters.ProtoReflect().Descriptor().Fields()
	filters.ProtoReflect().Clear(fields.ByName("limit"))
	filters.ProtoReflect().Clear(fields.ByName("cursor"))
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(filters)
	sum := sha256.Sum256(b)
	c := From(ctx)
	binding = c.Tenant.String() + "|" + c.PrincipalID() + "|" + procedure + "|" + hex.EncodeToString(sum[:])
	if req.GetCursor() != "" {
		if after, err = p.Cursors.Open(binding, req.GetCursor()); err != nil {
			return "", 0, "", err
		}
	}
	return after, limit, binding, nil
}

// Next returns the cursor for the page after last, or nil at the end.
func (p Pager) Next(binding, last string) *string {
	if last == "" {
		return nil
	}
	return proto.String(p.Cursors.Seal(binding, last))
}

// NewestFirst pages items kept oldest first, newest first from the item after the cursor's:
// it returns the page and the next cursor.
func NewestFirst[T, P any](p Pager, items []T, idOf func(T) string, conv func(T) P, after string, limit int, binding string) ([]P, *string) {
	out := []P{}
	started := after == ""
	for i := len(items) - 1; i >= 0; i-- {
		it := items[i]
		if !started {
			started = idOf(it) == after
			continue
		}
		if len(out) == limit {
			return out, p.Next(binding, idOf(items[i+1]))
		}
		out = append(out, conv(it))
	}
	return out, nil
}
