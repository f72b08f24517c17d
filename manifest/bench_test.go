package manifest_test

import (
	"io"
	"testing"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/manifest"
)

// BenchmarkWriteBundle streams a bundle of 1000 preserved message manifests (each written,
// its hash checked, and hashed into bundleHash).
func BenchmarkWriteBundle(b *testing.B) {
	ms := make([]*svcv1.Manifest, 1000)
	for i := range ms {
		ms[i] = applied(b)
		ms[i].AssetId = "ast_01JD8Y5Q6R7S8T9V0W1X" + string(rune('A'+i/1000)) + string([]byte{byte('0' + i/100%10), byte('0' + i/10%10), byte('0' + i%10)})
		manifest.Seal(ms[i])
	}
	bd, err := manifest.Bundle(tenant, t0, ms)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	b.ReportAllocs()
	for b.Loop() {
		cw := &countWriter{}
		if _, err := manifest.WriteBundle(cw, manifest.BundleHeader{TenantRef: tenant, GeneratedAt: t0.Add(time.Hour), Count: 1000}, seqOf(bd.Manifests)); err != nil {
			b.Fatal(err)
		}
		n = cw.n
	}
	b.SetBytes(n)
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)
