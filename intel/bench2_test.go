package intel_test

import (
	"bytes"
	"testing"

	"svc.dev/svc/internal/intelcorpus"
	"svc.dev/svc/mail"
)

func BenchmarkReadDocument(b *testing.B) {
	c := intelcorpus.Generate(3, 115, 2500, benchAsOf)
	i := 0
	for b.Loop() {
		mail.ReadDocument(bytes.NewReader(c.Messages[i%len(c.Messages)].Raw), nil)
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
