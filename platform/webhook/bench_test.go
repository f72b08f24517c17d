package webhook_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/platform/webhook"
)

// countingReceiver checks each request's signature by hand and counts the events it
// carries; failing ones answer 500 after reading the body.
type countingReceiver struct {
	srv      *httptest.Server
	secret   atomic.Value // string
	events   atomic.Int64
	requests atomic.Int64
	badSig   atomic.Int64
}

func newCountingReceiver(b *testing.B, fail bool) *countingReceiver {
	rc := &countingReceiver{}
	rc.secret.Store("")
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.requests.Add(1)
		if fail {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		h := r.Header.Get("Svc-Signature")
		t, sig, _ := strings.Cut(strings.TrimPrefix(h, "t="), ",v1=")
		m := hmac.New(sha256.New, []byte(rc.secret.Load().(string)))
		m.Write([]byte(t))
		m.Write([]byte{'.'})
		m.Write(body)
		if hex.EncodeToString(m.Sum(nil)) != sig {
			rc.badSig.Add(1)
		}
		rc.events.Add(int64(bytes.Count(body, []byte(`"specversion":"1.0"`))))
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(rc.srv.Close)
	return rc
}

// BenchmarkFanout publishes b.N live events to an application with five webhooks on
// 127.0.0.1, one of whose receivers fails every request, and measures events delivered per
// second to the four others (batched, signed, acknowledged), with the engine's Run loop.
// "live" publishes while Run delivers; "queued" publishes everything first and times the
// delivery alone. Storage is the in-memory store: this measures the engine, HTTP and
// signing, not disk.
func BenchmarkFanout(b *testing.B) {
	b.Run("live", func(b *testing.B) { benchFanout(b, false) })
	b.Run("queued", func(b *testing.B) { benchFanout(b, true) })
}

func benchFanout(b *testing.B, prequeue bool) {
	e := newEnv(b, func(o *webhook.Options) { o.Now = time.Now })
	var good []*countingReceiver
	for range 4 {
		rc := newCountingReceiver(b, false)
		_, secret := e.create(rc.srv.URL, platform.ModeLive)
		rc.secret.Store(secret)
		good = append(good, rc)
	}
	bad := newCountingReceiver(b, true)
	e.create(bad.srv.URL, platform.ModeLive)

	evs := make([]*svcv1.Event, b.N)
	for i := range evs {
		evs[i] = e.event(event.ExecutionCompleted, platform.ModeLive)
	}
	publish := func() time.Duration {
		start := time.Now()
		for _, ev := range evs {
			if _, err := e.eng.Publish(e.ctx, platform.ModeLive, ev, []string{e.app}); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	var published time.Duration
	if prequeue {
		published = publish()
	}
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error)
	b.ResetTimer()
	start := time.Now()
	go func() { done <- e.eng.Run(ctx) }()
	if !prequeue {
		published = publish()
	}
	for {
		n := int64(0)
		for _, rc := range good {
			n += rc.events.Load()
		}
		if n >= int64(len(good)*b.N) {
			break
		}
		if time.Since(start) > 5*time.Minute {
			b.Fatalf("delivered %d of %d", n, len(good)*b.N)
		}
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	<-done

	var reqs, delivered int64
	for _, rc := range good {
		reqs += rc.requests.Load()
		delivered += rc.events.Load()
		if rc.badSig.Load() != 0 {
			b.Fatalf("%d requests with a bad signature", rc.badSig.Load())
		}
	}
	b.ReportMetric(float64(delivered)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(reqs)/elapsed.Seconds(), "requests/s")
	b.ReportMetric(float64(delivered)/float64(reqs), "events/request")
	b.ReportMetric(float64(b.N)/published.Seconds(), "publish/s")
	b.ReportMetric(float64(bad.requests.Load()), "failed-requests")
}

// BenchmarkSign signs a full batch body (20 events, about 9 KB) with two secrets, as during
// a rotation.
func BenchmarkSign(b *testing.B) {
	body := bytes.Repeat([]byte(`{"specversion":"1.0","id":"evt_01M817QNM0FE1M6FMQ8D1GW6M7","source":"/v1/executions","type":"svc.execution.completed","data":{"k":"v"}},`), 20*3)
	b.SetBytes(int64(len(body)))
	now := time.Now()
	for b.Loop() {
		_ = webhook.Sign(now, body, "whsec_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "whsec_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb")
	}
}
