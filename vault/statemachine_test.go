package vault_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"svc.dev/svc/vault"
	"svc.dev/svc/vault/vaulttest"
)

// The model of the vault: objects and, per content, the copies on each
// tier, whether a copy is damaged on disk (actual) and whether the vault
// has found out (flagged). The rules are the design's, written out again
// independently of the code: see docs/vault.md.

type mCopy struct{ present, damaged, flagged bool }

func (c mCopy) good() bool { return c.present && !c.flagged }

type mBlob struct {
	refs, coldRefs int
	hot, cold      mCopy
}

type mObject struct {
	state   vault.State
	content int // index into contents; -1 unknown
	held    bool
	cold    bool
}

type model struct {
	objects map[string]*mObject
	blobs   map[int]*mBlob
}

// contents: a few small (packed) and large (streamed) bodies; several
// objects with the same content exercise deduplication.
var contents = func() [][]byte {
	var out [][]byte
	for i, n := range []int{0, 10, 1000, 2048, 2049, 70000} {
		out = append(out, payload(uint64(1000+i), n))
	}
	return out
}()

func (m *model) blob(c int) *mBlob {
	if m.blobs[c] == nil {
		m.blobs[c] = &mBlob{}
	}
	return m.blobs[c]
}

// trim is the vault's rule for dropping copies nobody needs.
func (m *model) trim(c int) {
	b := m.blobs[c]
	if b.refs == 0 {
		delete(m.blobs, c)
		return
	}
	if b.refs == b.coldRefs && b.hot.present && b.cold.good() {
		b.hot = mCopy{}
	}
	if b.coldRefs == 0 && b.cold.present && b.hot.good() {
		b.cold = mCopy{}
	}
}

// storeHot is a Put's effect on the hot copy: an intact-looking copy is
// verified (and flagged when damaged), otherwise a fresh copy is written.
func (m *model) storeHot(c int) {
	b := m.blob(c)
	if b.hot.good() && b.hot.damaged {
		b.hot.flagged = true
	}
	if !b.hot.good() {
		b.hot = mCopy{present: true}
	}
}

type machine struct {
	v      *vault.Vault
	meta   *vaulttest.Meta
	dir    string
	m      model
	ids    []string
	newIDs int
}

const smTenant = "test:usr_model"

func (s *machine) init(t *rapid.T) {
	dir, err := os.MkdirTemp("", "vault-sm-")
	if err != nil {
		t.Fatal(err)
	}
	s.dir, s.meta = dir, vaulttest.NewMeta()
	s.v, err = vault.Open(dir, s.meta, vaulttest.NewKeyStore(), vaulttest.KEK, &vault.Options{PackThreshold: 2048})
	if err != nil {
		t.Fatal(err)
	}
	s.m = model{objects: map[string]*mObject{}, blobs: map[int]*mBlob{}}
}

func (s *machine) cleanup() {
	s.v.Close()
	os.RemoveAll(s.dir)
}

func (s *machine) pickID(t *rapid.T) string {
	if len(s.ids) == 0 {
		t.Skip("no objects yet")
	}
	return rapid.SampledFrom(s.ids).Draw(t, "id")
}

func (s *machine) newID() string {
	s.newIDs++
	id := fmt.Sprintf("vlt_01JD%022d", s.newIDs)
	s.ids = append(s.ids, id)
	return id
}

func wantErr(t *rapid.T, op string, err, want error) {
	t.Helper()
	if want == nil && err != nil {
		t.Fatalf("%s: unexpected error %v", op, err)
	}
	if want != nil && !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", op, err, want)
	}
}

// commitPut is the model of a Put (new or redone) of content c into o.
func (s *machine) commitPut(o *mObject, c int) {
	s.m.storeHot(c)
	b := s.m.blob(c)
	if o.held && o.cold {
		b.coldRefs--
	}
	if !o.held {
		b.refs++
	}
	o.state, o.content, o.held, o.cold = vault.StateCommitted, c, true, false
	s.m.trim(c)
}

func (s *machine) Put(t *rapid.T) {
	c := rapid.IntRange(0, len(contents)-1).Draw(t, "content")
	id := s.newID()
	req := vault.PutRequest{ID: id, SizeBytes: -1}
	if rapid.Bool().Draw(t, "known size") {
		req.SizeBytes = int64(len(contents[c]))
	}
	o, err := s.v.Put(ctx, smTenant, req, bytes.NewReader(contents[c]))
	wantErr(t, "put", err, nil)
	mo := &mObject{content: -1}
	s.m.objects[id] = mo
	s.commitPut(mo, c)
	if o.State != vault.StateCommitted || o.SHA256 != vault.Sum(contents[c]) {
		t.Fatalf("put returned %+v", o)
	}
}

// failingReader fails after n bytes, like a provider stream that breaks.
type failingReader struct {
	r io.Reader
	n int
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("connection reset")
	}
	if len(p) > f.n {
		p = p[:f.n]
	}
	n, err := f.r.Read(p)
	f.n -= n
	return n, err
}

func (s *machine) PutFails(t *rapid.T) {
	c := rapid.IntRange(1, len(contents)-1).Draw(t, "content")
	id := s.newID()
	cut := rapid.IntRange(0, len(contents[c])-1).Draw(t, "cut")
	_, err := s.v.Put(ctx, smTenant, vault.PutRequest{ID: id, SizeBytes: -1}, &failingReader{bytes.NewReader(contents[c]), cut})
	if err == nil {
		t.Fatal("a put whose body failed succeeded")
	}
	if cut > 2048 {
		// Streamed content is recorded before it is written (once more
		// than the pack threshold has been read).
		s.m.objects[id] = &mObject{state: vault.StateUploading, content: -1}
	} else {
		s.ids = s.ids[:len(s.ids)-1] // small content is recorded only at commit
	}
}

func (s *machine) PutAgain(t *rapid.T) {
	id := s.pickID(t)
	o := s.m.objects[id]
	c := o.content
	if c < 0 || rapid.Bool().Draw(t, "other content") {
		c = rapid.IntRange(0, len(contents)-1).Draw(t, "content")
	}
	got, err := s.v.Put(ctx, smTenant, vault.PutRequest{ID: id, SizeBytes: -1}, bytes.NewReader(contents[c]))
	switch {
	case o.state == vault.StateDeleted || o.state == vault.StateDeleting:
		wantErr(t, "put into a deleted object", err, vault.ErrInvalidState)
	case (o.state == vault.StateCommitted || o.state == vault.StateCold) && c == o.content:
		wantErr(t, "put again", err, nil)
		if got.State != o.state {
			t.Fatalf("put again changed the state to %s", got.State)
		}
	case o.held && c != o.content:
		wantErr(t, "put other content", err, vault.ErrInvalidState)
	default: // uploading, or corrupt with its own content: redone
		wantErr(t, "redo put", err, nil)
		s.commitPut(o, c)
	}
}

func (s *machine) Open(t *rapid.T) {
	id := s.pickID(t)
	o := s.m.objects[id]
	got, err := read(t, s.v, smTenant, id)
	if o.state != vault.StateCommitted && o.state != vault.StateCold {
		wantErr(t, "open", err, vault.ErrInvalidState)
		return
	}
	// The object's own tier first, else the other tier's intact copy; a
	// read that finds its copy damaged flags it, and the object becomes
	// corrupt if it was its own tier's copy.
	b := s.m.blobs[o.content]
	first, second := &b.hot, &b.cold
	if o.cold {
		first, second = second, first
	}
	chosen := first
	if !first.good() {
		chosen = second
	}
	if !chosen.good() {
		wantErr(t, "open without an intact copy", err, vault.ErrInvalidData)
		return
	}
	if chosen.damaged {
		wantErr(t, "open damaged", err, vault.ErrInvalidData)
		chosen.flagged = true
		if chosen == first {
			o.state = vault.StateCorrupt
		}
		return
	}
	wantErr(t, "open", err, nil)
	if !bytes.Equal(got, contents[o.content]) {
		t.Fatal("open returned other bytes")
	}
}

// probe is the model of re-reading the copy an object reads from.
func (s *machine) probe(o *mObject) {
	b := s.m.blobs[o.content]
	cp := &b.hot
	if o.cold {
		cp = &b.cold
	}
	ok := cp.present && !cp.damaged
	if cp.present {
		cp.flagged = !ok
	}
	switch {
	case !ok:
		o.state = vault.StateCorrupt
	case o.cold:
		o.state = vault.StateCold
	default:
		o.state = vault.StateCommitted
	}
}

func verifiable(st vault.State) bool {
	return st == vault.StateCommitted || st == vault.StateCold || st == vault.StateCorrupt
}

func (s *machine) Verify(t *rapid.T) {
	id := s.pickID(t)
	o := s.m.objects[id]
	got, err := s.v.Verify(ctx, smTenant, id)
	if !verifiable(o.state) {
		wantErr(t, "verify", err, vault.ErrInvalidState)
		return
	}
	wantErr(t, "verify", err, nil)
	s.probe(o)
	if got.State != o.state {
		t.Fatalf("verify gave %s, model %s", got.State, o.state)
	}
}

// Damage flips a byte of a stored copy, or removes a whole-file copy.
func (s *machine) Damage(t *rapid.T) {
	var cs []int
	for c := range s.m.blobs {
		cs = append(cs, c)
	}
	if len(cs) == 0 {
		t.Skip("nothing stored")
	}
	slices.Sort(cs)
	c := rapid.SampledFrom(cs).Draw(t, "content")
	mb := s.m.blobs[c]
	var b vault.Blob
	_ = s.meta.View(ctx, smTenant, func(tx vault.MetaTx) error {
		var err error
		b, err = tx.Blob(vault.Sum(contents[c]))
		return err
	})
	cold := rapid.Bool().Draw(t, "cold copy")
	p, cp, sub := b.Hot, &mb.hot, "hot"
	if cold {
		p, cp, sub = b.Cold, &mb.cold, "cold"
	}
	if p == nil || cp.damaged {
		t.Skip("no such copy, or damaged already")
	}
	path := filepath.Join(s.dir, sub, filepath.FromSlash(p.Name))
	if !p.Pack && rapid.Bool().Draw(t, "remove") {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	} else {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		off := p.Offset + rapid.Int64Range(0, p.Length-1).Draw(t, "offset")
		one := []byte{0}
		f.ReadAt(one, off)
		one[0] ^= byte(rapid.IntRange(1, 255).Draw(t, "bits"))
		f.WriteAt(one, off)
		f.Close()
	}
	cp.damaged = true
}

func (s *machine) Cold(t *rapid.T) { s.moveTier(t, true) }
func (s *machine) Warm(t *rapid.T) { s.moveTier(t, false) }

func (s *machine) moveTier(t *rapid.T, toCold bool) {
	id := s.pickID(t)
	o := s.m.objects[id]
	op, from, to := s.v.Warm, vault.StateCold, vault.StateCommitted
	if toCold {
		op, from, to = s.v.Cold, vault.StateCommitted, vault.StateCold
	}
	got, err := op(ctx, smTenant, id)
	if o.state == to {
		wantErr(t, "move to the same tier", err, nil)
		return
	}
	if o.state != from {
		wantErr(t, "move", err, vault.ErrInvalidState)
		return
	}
	b := s.m.blobs[o.content]
	dst, src := &b.hot, &b.cold
	if toCold {
		dst, src = &b.cold, &b.hot
	}
	if !dst.good() {
		if !src.good() || src.damaged {
			if src.good() {
				src.flagged = true
			}
			wantErr(t, "move from a damaged copy", err, vault.ErrInvalidData)
			return
		}
		*dst = mCopy{present: true}
	}
	wantErr(t, "move", err, nil)
	o.state, o.cold = to, toCold
	if toCold {
		b.coldRefs++
	} else {
		b.coldRefs--
	}
	s.m.trim(o.content)
	if got.State != to {
		t.Fatalf("moved object is %s", got.State)
	}
}

func (s *machine) Delete(t *rapid.T) {
	id := s.pickID(t)
	o := s.m.objects[id]
	got, err := s.v.Delete(ctx, smTenant, id)
	wantErr(t, "delete", err, nil)
	if o.state != vault.StateDeleted && o.held {
		b := s.m.blobs[o.content]
		b.refs--
		if o.cold {
			b.coldRefs--
		}
		s.m.trim(o.content)
	}
	o.state, o.held = vault.StateDeleted, false
	if got.State != vault.StateDeleted {
		t.Fatalf("deleted object is %s", got.State)
	}
}

func (s *machine) Scrub(t *rapid.T) {
	rep, err := s.v.Scrub(ctx, smTenant, &vault.ScrubOptions{OrphanGrace: time.Nanosecond})
	wantErr(t, "scrub", err, nil)
	var corrupt []string
	for _, id := range s.ids { // ids are in creation order, as Scrub walks
		o := s.m.objects[id]
		if verifiable(o.state) {
			s.probe(o)
		}
	}
	for _, id := range s.ids {
		o := s.m.objects[id]
		if o.state != vault.StateCorrupt {
			continue
		}
		// Repair from the other tier's copy when it is intact.
		b := s.m.blobs[o.content]
		own, other := &b.hot, &b.cold
		if o.cold {
			own, other = other, own
		}
		if other.good() && other.damaged {
			other.flagged = true
		}
		if other.good() {
			*own = mCopy{present: true}
			s.probe(o)
		} else {
			corrupt = append(corrupt, id)
		}
	}
	if fmt.Sprint(rep.Corrupt) != fmt.Sprint(corrupt) && !(len(rep.Corrupt) == 0 && len(corrupt) == 0) {
		t.Fatalf("scrub reports corrupt %v, model %v", rep.Corrupt, corrupt)
	}
	// After a collection, every stored file is used by a record.
	used := map[string]bool{}
	_ = s.meta.View(ctx, smTenant, func(tx vault.MetaTx) error {
		return tx.Blobs(vault.Digest{}, func(b vault.Blob) bool {
			for sub, p := range map[string]*vault.Placement{"hot": b.Hot, "cold": b.Cold, "text": b.Text} {
				if p != nil {
					if sub == "text" {
						sub = "hot"
					}
					used[filepath.Join(s.dir, sub, filepath.FromSlash(p.Name))] = true
				}
			}
			return true
		})
	})
	// (The pack being appended to stays, recorded, even when empty.)
	packRecorded := func(p string) bool {
		rel, err := filepath.Rel(filepath.Join(s.dir, "hot"), p)
		if err != nil {
			return false
		}
		return s.meta.View(ctx, smTenant, func(tx vault.MetaTx) error {
			_, err := tx.Pack(filepath.ToSlash(rel))
			return err
		}) == nil
	}
	for _, sub := range []string{"hot", "cold"} {
		filepath.Walk(filepath.Join(s.dir, sub, "t"), func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() && !used[p] && !packRecorded(p) {
				t.Fatalf("scrub left an unused file %s", p)
			}
			return nil
		})
	}
}

// closeAndCheck closes the vault (which closes the pack being appended
// to) and checks that every pack file left holds a live entry.
func (s *machine) closeAndCheck(t *rapid.T) {
	s.v.Close()
	filepath.Walk(filepath.Join(s.dir, "hot", "t"), func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || filepath.Base(filepath.Dir(p)) != "packs" {
			return nil
		}
		rel, _ := filepath.Rel(filepath.Join(s.dir, "hot"), p)
		var pk vault.Pack
		err = s.meta.View(ctx, smTenant, func(tx vault.MetaTx) error {
			pk, err = tx.Pack(filepath.ToSlash(rel))
			return err
		})
		if err != nil || pk.Live <= 0 {
			t.Fatalf("pack %s left after closing: %+v, %v", rel, pk, err)
		}
		return nil
	})
}

// Check compares the vault's records with the model after every step.
func (s *machine) Check(t *rapid.T) {
	// Every pack's live count is the number of placements in it.
	live := map[string]int{}
	_ = s.meta.View(ctx, smTenant, func(tx vault.MetaTx) error {
		return tx.Blobs(vault.Digest{}, func(b vault.Blob) bool {
			for _, p := range []*vault.Placement{b.Hot, b.Text} {
				if p != nil && p.Pack {
					live[p.Name]++
				}
			}
			return true
		})
	})
	for name, n := range live {
		var pk vault.Pack
		err := s.meta.View(ctx, smTenant, func(tx vault.MetaTx) error {
			var err error
			pk, err = tx.Pack(name)
			return err
		})
		if err != nil || pk.Live != n {
			t.Fatalf("pack %s: record %+v (%v), %d placements", name, pk, err, n)
		}
	}
	for _, id := range s.ids {
		o := s.m.objects[id]
		got, err := s.v.Get(ctx, smTenant, id)
		if err != nil {
			t.Fatalf("get %s: %v", id, err)
		}
		if got.State != o.state || got.Held != o.held || got.ColdSince.IsZero() == o.cold && o.state != vault.StateDeleted {
			t.Fatalf("object %s: vault %s held=%v cold=%v, model %+v", id, got.State, got.Held, !got.ColdSince.IsZero(), *o)
		}
	}
	for c := range contents {
		mb := s.m.blobs[c]
		var b vault.Blob
		err := s.meta.View(ctx, smTenant, func(tx vault.MetaTx) error {
			var err error
			b, err = tx.Blob(vault.Sum(contents[c]))
			return err
		})
		if mb == nil {
			if !errors.Is(err, vault.ErrNotFound) {
				t.Fatalf("content %d: blob %+v (%v) where the model has none", c, b, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("content %d: %v", c, err)
		}
		same := func(p *vault.Placement, m mCopy) bool {
			return (p != nil) == m.present && (p == nil || p.Corrupt == m.flagged)
		}
		if b.Refs != mb.refs || b.ColdRefs != mb.coldRefs || !same(b.Hot, mb.hot) || !same(b.Cold, mb.cold) {
			t.Fatalf("content %d: vault refs %d/%d hot %+v cold %+v; model %+v", c, b.Refs, b.ColdRefs, b.Hot, b.Cold, *mb)
		}
	}
}

func TestStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := &machine{}
		s.init(t)
		defer s.cleanup()
		t.Repeat(rapid.StateMachineActions(s))
		s.closeAndCheck(t)
	})
}
