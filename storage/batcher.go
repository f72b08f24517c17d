package storage

import (
	"context"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
)

// Batcher writes resources in the background, many per transaction, so that recording
// every call (audit) or state change (events) costs the request no disk write. Flush waits for
// what was added; Close writes what is pending. A crash loses at most the last few
// milliseconds of entries, which is the trade-off for keeping fsyncs off the request path.
type Batcher[T proto.Message] struct {
	col  Records[T]
	log  func(error)
	mu   sync.Mutex
	cond *sync.Cond
	buf  []Item[T]
	busy bool
	stop bool
	done chan struct{}
}

// NewBatcher starts a Batcher writing to col; log receives the errors of batches that
// failed three times.
func NewBatcher[T proto.Message](col Records[T], log func(error)) *Batcher[T] {
	w := &Batcher[T]{col: col, log: log, done: make(chan struct{})}
	w.cond = sync.NewCond(&w.mu)
	go w.loop()
	return w
}

// Add queues v as the resource id of tenant.
func (w *Batcher[T]) Add(tenant, id string, v T) {
	w.mu.Lock()
	w.buf = append(w.buf, Item[T]{Tenant: tenant, ID: id, Value: v})
	w.mu.Unlock()
	w.cond.Broadcast()
}

func (w *Batcher[T]) loop() {
	defer close(w.done)
	for {
		w.mu.Lock()
		for len(w.buf) == 0 && !w.stop {
			w.cond.Wait()
		}
		if len(w.buf) == 0 && w.stop {
			w.mu.Unlock()
			return
		}
		batch := w.buf
		w.buf, w.busy = nil, true
		w.mu.Unlock()
		var err error
		for attempt := 0; attempt < 3; attempt++ {
			if err = w.col.PutMany(context.Background(), batch); err == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil && w.log != nil {
			w.log(err)
		}
		w.mu.Lock()
		w.busy = false
		w.mu.Unlock()
		w.cond.Broadcast()
	}
}

// Flush waits until everything added so far is written.
func (w *Batcher[T]) Flush() {
	w.mu.Lock()
	for len(w.buf) > 0 || w.busy {
		w.cond.Wait()
	}
	w.mu.Unlock()
}

// Close writes what is pending and stops the writer.
func (w *Batcher[T]) Close() {
	w.mu.Lock()
	w.stop = true
	w.mu.Unlock()
	w.cond.Broadcast()
	<-w.done
}
