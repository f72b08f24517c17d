package receipt_test

import (
	"crypto/ed25519"
	"fmt"
	"testing"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/receipt"
)

// benchInput is an execution of n preserve+trash objects, every one completed.
func benchInput(n int) receipt.Input {
	in := fullInput()
	in.Objects = make([]receipt.Object, n)
	for i := range in.Objects {
		in.Objects[i] = receipt.Object{
			AssetID: fmt.Sprintf("ast_01JD8Y5Q6R7S8T%010d", n-i), ProviderObjectID: fmt.Sprintf("msg-%08d", i),
			Actions: []svcv1.PlanAction{1, 2}, Status: receipt.Completed, Preserved: true, Removed: true,
			VaultObjectID: fmt.Sprintf("vlt_01JD8Y5Q6R7S8T%010d", i), VaultSHA256: sha1, ProviderResultID: fmt.Sprintf("trash-%d", i),
			Bytes: 4096, Restorable: true,
		}
	}
	return in
}

// BenchmarkIssue is the whole of what the engine pays at the end of an execution: build the
// receipt (validate, sort), hash its canonical JSON, sign, and encode the served bytes.
// BenchmarkEd25519Sign is the raw signature alone over a hash; scripts/bench reports the ratio.
func BenchmarkIssue(b *testing.B) {
	s := exampleSigner()
	for _, n := range []int{1, 10, 1000} {
		in := benchInput(n)
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				_, served, err := receipt.Issue(&in, s)
				if err != nil {
					b.Fatal(err)
				}
				size = len(served)
			}
			b.ReportMetric(float64(size), "bytes/receipt")
		})
	}
}

func BenchmarkEd25519Sign(b *testing.B) {
	priv := ed25519.NewKeyFromSeed(exampleSeed)
	msg := []byte(sha1) // a receipt hash: 64 hex characters
	b.ReportAllocs()
	for b.Loop() {
		ed25519.Sign(priv, msg)
	}
}

// BenchmarkIssueVsSign interleaves the two in every iteration (one Issue, one raw signature)
// so that both see the same machine load, and reports each one's mean and their ratio.
func BenchmarkIssueVsSign(b *testing.B) {
	s := exampleSigner()
	priv := ed25519.NewKeyFromSeed(exampleSeed)
	msg := []byte(sha1)
	for _, n := range []int{1, 10, 1000} {
		in := benchInput(n)
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			var issue, sign time.Duration
			for b.Loop() {
				t := time.Now()
				if _, _, err := receipt.Issue(&in, s); err != nil {
					b.Fatal(err)
				}
				m := time.Now()
				ed25519.Sign(priv, msg)
				sign += time.Since(m)
				issue += m.Sub(t)
			}
			b.ReportMetric(float64(issue.Nanoseconds())/float64(b.N), "ns/issue")
			b.ReportMetric(float64(sign.Nanoseconds())/float64(b.N), "ns/sign")
			b.ReportMetric(float64(issue)/float64(sign), "issue/sign")
		})
	}
}
