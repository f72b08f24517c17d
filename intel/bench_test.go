package intel_test

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/emersion/go-message"

	"svc.dev/svc/intel"
	"svc.dev/svc/internal/intelcorpus"
	"svc.dev/svc/mail"
)

var benchAsOf = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// BenchmarkScan compares, over the same varied messages (billing mail of every kind in heavy
// noise: 60 services in 8,000 other messages), the intel scanner with a parse-only pass
// (go-message walks every part and reads its decoded body). Both report msgs/s; the full
// measurement over 100,000 messages with peak memory is "svc intel bench --speed 100000"
// (docs/intel.md).
func BenchmarkScan(b *testing.B) {
	c := intelcorpus.Generate(3, 60, 8000, benchAsOf)
	b.Run("parse-only", func(b *testing.B) {
		i := 0
		for b.Loop() {
			e, err := message.Read(bytes.NewReader(c.Messages[i%len(c.Messages)].Raw))
			if e != nil {
				e.Walk(func(_ []int, p *message.Entity, _ error) error {
					io.Copy(io.Discard, p.Body)
					return nil
				})
			}
			_ = err
			i++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
	b.Run("scan", func(b *testing.B) {
		s := intel.NewScanner(nil)
		i := 0
		for b.Loop() {
			s.Scan("bench", bytes.NewReader(c.Messages[i%len(c.Messages)].Raw))
			i++
		}
		s.Result(benchAsOf)
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
}

// BenchmarkReadDocument is the reading part of a scan alone (MIME, charsets, HTML and PDF text).
func BenchmarkReadDocument(b *testing.B) {
	c := intelcorpus.Generate(3, 115, 2500, benchAsOf)
	i := 0
	for b.Loop() {
		mail.ReadDocument(bytes.NewReader(c.Messages[i%len(c.Messages)].Raw), nil)
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkScanBilling scans billing mail only (no noise): the extraction's worst case.
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
