package intel_test

import (
	"bytes"
	"testing"

	"svc.dev/svc/intel"
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

func BenchmarkScanBilling(b *testing.B) {
	c := intelcorpus.Generate(3, 115, 0, benchAsOf)
	s := intel.NewScanner(nil)
	i := 0
	for b.Loop() {
		s.Scan("bench", bytes.NewReader(c.Messages[i%len(c.Messages)].Raw))
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
