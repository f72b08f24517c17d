package vault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"svc.dev/svc/vault/backend"
)

// writePack makes buf durable as a region of a pack file and returns the
// pack's name and the region's offset. On a backend.Appender the region is
// appended to the tenant's open pack (one data sync; a new pack is started
// when it reaches MaxPackSize), which is returned with its recording count
// raised (the caller lowers it once the group is recorded); otherwise buf is a
// new pack file.
func (c *committer) writePack(ctx context.Context, buf []byte) (string, int64, *openPack, error) {
	v, t := c.v, c.t
	app, ok := v.hot.(backend.Appender)
	if !ok {
		name := t.packName()
		return name, 0, nil, backend.Save(ctx, v.hot, name, buf)
	}
	if c.pack != nil && c.pack.size >= v.opts.MaxPackSize {
		c.closePack(ctx)
	}
	if c.pack == nil {
		name := t.packName()
		f, err := app.OpenAppend(ctx, name)
		if err != nil {
			return "", 0, nil, err
		}
		c.pack = &openPack{name: name, f: f}
		v.setAppending(name, true)
	}
	off, err := c.pack.f.Append(buf)
	if err == nil {
		err = c.pack.f.Sync()
	}
	if err != nil {
		c.closePack(ctx) // start afresh after a failed write
		return "", 0, nil, err
	}
	c.pack.size = off + int64(len(buf))
	c.pack.recording.Add(1)
	return c.pack.name, off, c.pack, nil
}

// closePack stops appending to the tenant's open pack; a pack none of
// whose entries is used any more (or that was never recorded) is removed.
// It waits for the groups written into the pack to be recorded first. The
// caller holds c.write.
func (c *committer) closePack(ctx context.Context) {
	p := c.pack
	if p == nil {
		return
	}
	c.pack = nil
	p.recording.Wait()
	_ = p.f.Close()
	v := c.v
	v.setAppending(p.name, false)
	var rm []removal
	_ = v.meta.Update(ctx, c.t.name, func(tx MetaTx) error {
		rm = nil
		pk, err := tx.Pack(p.name)
		if errors.Is(err, ErrNotFound) {
			rm = []removal{{v.hot, p.name}}
			return nil
		}
		if err != nil || pk.Live > 0 {
			return err
		}
		rm = []removal{{v.hot, p.name}}
		return tx.DeletePack(p.name)
	})
	v.remove(ctx, rm)
}

// readBack reads a written pack region in one read and verifies every entry: it must
// open (authenticated under the key derived from the stored salt, which must be the
// one written) to exactly the plaintext that was sealed. The plaintext's SHA-256 was
// computed before sealing; bytes equal to it have that SHA-256, so the comparison
// verifies the stored copy against the digest without hashing the content again.
func (c *committer) readBack(ctx context.Context, name string, base int64, written []byte, entries []*entry, sl *sealers) {
	fail := func(err error) {
		for _, e := range entries {
			e.err = err
		}
	}
	rc, err := c.v.openStored(ctx, c.v.hot, true, name, base, int64(len(written))) // the device, not the cache of the write
	if err != nil {
		fail(err)
		return
	}
	defer rc.Close()
	// One byte more than was written tells a longer region apart.
	data := getBuf(len(written) + 1)
	defer func() { putBuf(data) }()
	data = data[:len(written)+1]
	n, err := io.ReadFull(rc, data)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		fail(err)
		return
	}
	data = data[:n]
	largest := 0
	for _, e := range entries {
		largest = max(largest, len(e.data))
	}
	plain := getBuf(largest)
	defer func() { putBuf(plain) }()
	now := c.v.now()
	for _, e := range entries {
		start, end := e.p.Offset-base, e.p.Offset-base+e.p.Length
		if end > int64(len(data)) {
			e.err = fmt.Errorf("pack %s: read back %d bytes, entry ends at %d: %w", name, len(data), end, ErrInvalidData)
			continue
		}
		plain, err = sl.of(e.text).OpenFor(plain[:0], data[start:end], e.digest)
		if err != nil {
			e.err = fmt.Errorf("pack %s: %w: %w", name, ErrInvalidData, err)
			continue
		}
		if int64(len(plain)) != e.size || !bytes.Equal(plain, e.data) {
			e.err = fmt.Errorf("pack %s: entry at %d reads back as other content: %w", name, e.p.Offset, ErrInvalidData)
			continue
		}
		e.p.VerifiedAt = now
	}
}

// bufPool recycles the buffers of group commits (the sealed pack region, its
// read-back, the opened plaintext): a few per group, each up to a pack's size.
var bufPool sync.Pool

// getBuf returns an empty buffer with room for n bytes.
func getBuf(n int) []byte {
	if b, ok := bufPool.Get().(*[]byte); ok && cap(*b) >= n {
		return (*b)[:0]
	} else if ok {
		bufPool.Put(b)
	}
	return make([]byte, 0, max(n, 64<<10))
}

// putBuf gives b back for reuse.
func putBuf(b []byte) {
	if cap(b) > 16<<20 {
		return
	}
	b = b[:0]
	bufPool.Put(&b)
}
