package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"google.golang.org/protobuf/proto"
)

const (
	defaultPageSize = 50
	maxPageSize     = 200
)

// pageRequest is what every list request has.
type pageRequest interface {
	proto.Message
	GetLimit() int32
	GetCursor() string
}

// pageStart reads limit and cursor. The cursor is bound to the caller, the tenant, the
// procedure and the filters (every other field of the request), so a cursor from another
// listing, or an altered one, is a validation error.
func (s *Server) pageStart(ctx context.Context, procedure string, req pageRequest) (after string, limit int, binding string, err error) {
	limit = int(req.GetLimit())
	if limit == 0 {
		limit = defaultPageSize
	}
	limit = min(limit, maxPageSize)
	filters := proto.Clone(req)
	fields := filters.ProtoReflect().Descriptor().Fields()
	filters.ProtoReflect().Clear(fields.ByName("limit"))
	filters.ProtoReflect().Clear(fields.ByName("cursor"))
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(filters)
	sum := sha256.Sum256(b)
	c := callerFrom(ctx)
	binding = c.Tenant.String() + "|" + c.principalID() + "|" + procedure + "|" + hex.EncodeToString(sum[:])
	if req.GetCursor() != "" {
		if after, err = s.cursors.Open(binding, req.GetCursor()); err != nil {
			return "", 0, "", err
		}
	}
	return after, limit, binding, nil
}

// nextCursor returns the cursor for the page after last, or nil at the end.
func (s *Server) nextCursor(binding, last string) *string {
	if last == "" {
		return nil
	}
	return proto.String(s.cursors.Seal(binding, last))
}
