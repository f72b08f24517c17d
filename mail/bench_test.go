package mail_test

import (
	"bytes"
	"testing"
	"time"

	"svc.dev/svc/internal/corpus"
	"svc.dev/svc/mail"
)

// BenchmarkRead reads the corpus's varied messages (the reader's cost per listed message).
func BenchmarkRead(b *testing.B) {
	msgs := corpus.Generate(1, 1000, time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))
	b.ResetTimer()
	i := 0
	for b.Loop() {
		mail.Read(bytes.NewReader(msgs[i%len(msgs)].Raw)).Facts()
		i++
	}
}
