package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"runtime"
	"strconv"
	"sync"

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
// plan; its output equals the generic canonical encoder's (tested). Reading a million small
// objects scattered on the heap is bound by memory latency, so large arrays are encoded in
// chunks on all cores while this goroutine feeds the chunks to the writer in order; at most
// a few chunks are in flight, so memory stays bounded.
func writeObjects(c *wire.Canon, objs []*svcv1.PlanObject) {
	c.Raw('[')
	const chunk = 4096
	if len(objs) < 2*chunk || runtime.GOMAXPROCS(0) < 2 {
		b, err := appendObjects(c.Buffer(), objs, 0)
		if err != nil {
			c.Fail(err)
			return
		}
		c.SetBuffer(append(b, ']'))
		return
	}
	type result struct {
		b   []byte
		err error
	}
	workers := runtime.GOMAXPROCS(0)
	pending := make(chan chan result, workers)
	go func() {
		defer close(pending)
		sem := make(chan struct{}, workers)
		for start := 0; start < len(objs); start += chunk {
			out := make(chan result, 1)
			pending <- out
			sem <- struct{}{}
			go func(start int) {
				defer func() { <-sem }()
				end := min(start+chunk, len(objs))
				bp := chunkBuffers.Get().(*[]byte)
				b, err := appendObjects((*bp)[:0], objs[start:end], start)
				out <- result{b, err}
			}(start)
		}
	}()
	failed := false
	for out := range pending {
		r := <-out
		if failed {
			continue // drain, so every worker finishes
		}
		if r.err != nil {
			c.Fail(r.err)
			failed = true
			continue
		}
		c.Raw(r.b...)
		c.SetBuffer(c.Buffer())
		b := r.b[:0]
		chunkBuffers.Put(&b)
	}
	c.Raw(']')
}

// chunkBuffers recycles the encoding buffers of writeObjects' chunks (about 1.3 MB each), so
// hashing a large plan allocates a few of them, not one per chunk.
var chunkBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096*320); return &b }}

// appendObjects appends objs as array elements; offset is the index of objs[0] in the whole
// array (a comma precedes every element but the array's first).
func appendObjects(b []byte, objs []*svcv1.PlanObject, offset int) ([]byte, error) {
	var err error
	for i, o := range objs {
		if i+offset > 0 {
			b = append(b, ',')
		}
		if b, err = appendObject(b, o); err != nil {
			return nil, fmt.Errorf("objects[%d]: %w", i+offset, err)
		}
	}
	return b, nil
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

// plainASCII marks the bytes a JSON string holds as they are.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendJSONString appends s as a JSON string; plain ASCII (ids, hashes, versions) takes a
// fast path, anything else goes through the codec's escaping.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plainASCII[s[i]] {
			return wire.AppendString(b, s)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}
