package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/wire"
)

// MaterialFields are the plan fields its hash covers, in canonical (sorted) order: every field
// that changes what an execution would do. planId, createdAt, expiresAt, policy, state, hash and
// authorization are not material: authorizing a plan, or it going stale, keeps its hash.
var MaterialFields = []string{
	"actor", "destination", "excluded", "intent", "meter", "objects", "operationClasses", "planVersion",
	"preservationRequired", "projection", "simulated", "sourceMarkers", "tenantId", "userId",
}

// Hash returns a plan's hash: the lowercase hex SHA-256 of the RFC 8785 canonical JSON of the
// object made of the plan's material fields, as the API serves them (its arrays in canonical
// order: see Canonicalize). docs/plans.md shows how to recompute it from a served plan.
func Hash(p *svcv1.Plan) (string, error) {
	h := sha256.New()
	if err := WriteMaterial(h, p); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// WriteMaterial writes the canonical JSON that Hash hashes.
func WriteMaterial(w hashWriter, p *svcv1.Plan) error {
	c := wire.NewCanon(w)
	m := p.ProtoReflect()
	c.Raw('{')
	for i, name := range MaterialFields {
		if i > 0 {
			c.Raw(',')
		}
		c.String(name)
		c.Raw(':')
		if name == "objects" {
			writeObjects(c, p.Objects)
			continue
		}
		c.Field(m, name)
	}
	c.Raw('}')
	return c.Close()
}

type hashWriter interface{ Write([]byte) (int, error) }

var _ hashWriter = hash.Hash(nil)

// writeObjects writes the objects array with appendObject, the hot path of hashing a large
// plan; its output equals the generic canonical encoder's (tested).
func writeObjects(c *wire.Canon, objs []*svcv1.PlanObject) {
	c.Raw('[')
	b := c.Buffer()
	for i, o := range objs {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendObject(b, o); err != nil {
			c.Fail(fmt.Errorf("objects[%d]: %w", i, err))
			return
		}
		if len(b) >= 32<<10 {
			c.SetBuffer(b)
			b = c.Buffer()
		}
	}
	c.SetBuffer(append(b, ']'))
}

var (
	actionNames   = names(svcv1.PlanAction(0).Descriptor().Values().Len(), func(i int) string { return enumString(svcv1.PlanAction(i)) })
	classNames    = names(svcv1.StorageClass(0).Descriptor().Values().Len(), func(i int) string { return enumString(svcv1.StorageClass(i)) })
	providerNames = names(svcv1.Provider(0).Descriptor().Values().Len(), func(i int) string { return enumString(svcv1.Provider(i)) })
)

func names(n int, f func(int) string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// appendObject appends a plan object's canonical JSON: members in sorted order
// (actions, assetId, expectedSha256, expectedSizeBytes, expectedVersion, preservationElected,
// provider, providerObjectId, sourceId, storageClass).
func appendObject(b []byte, o *svcv1.PlanObject) ([]byte, error) {
	b = append(b, `{"actions":[`...)
	for i, a := range o.Actions {
		if i > 0 {
			b = append(b, ',')
		}
		if int(a) <= 0 || int(a) >= len(actionNames) {
			return nil, fmt.Errorf("action %d has no name", a)
		}
		b = append(append(append(b, '"'), actionNames[a]...), '"')
	}
	b = append(b, `],"assetId":`...)
	b = appendJSONString(b, o.AssetId)
	b = append(b, `,"expectedSha256":`...)
	if o.ExpectedSha256 == nil {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, *o.ExpectedSha256)
	}
	if o.ExpectedSizeBytes > 1<<53-1 || o.ExpectedSizeBytes < -(1<<53-1) {
		return nil, fmt.Errorf("expectedSizeBytes %d is beyond the exact range of JSON numbers", o.ExpectedSizeBytes)
	}
	b = append(b, `,"expectedSizeBytes":`...)
	b = strconv.AppendInt(b, o.ExpectedSizeBytes, 10)
	b = append(b, `,"expectedVersion":`...)
	if o.ExpectedVersion == nil {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, *o.ExpectedVersion)
	}
	b = append(b, `,"preservationElected":`...)
	b = strconv.AppendBool(b, o.PreservationElected)
	b = append(b, `,"provider":`...)
	b = appendEnum(b, providerNames, int(o.Provider))
	b = append(b, `,"providerObjectId":`...)
	b = appendJSONString(b, o.ProviderObjectId)
	b = append(b, `,"sourceId":`...)
	b = appendJSONString(b, o.SourceId)
	b = append(b, `,"storageClass":`...)
	b = appendEnum(b, classNames, int(o.StorageClass))
	return append(b, '}'), nil
}

func appendEnum(b []byte, names []string, n int) []byte {
	if n <= 0 || n >= len(names) || names[n] == "" {
		return append(b, "null"...)
	}
	return append(append(append(b, '"'), names[n]...), '"')
}

// appendJSONString appends s as a JSON string; plain ASCII (ids, hashes, versions) takes a
// fast path, anything else goes through the codec's escaping.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return wire.AppendString(b, s)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}
