package vault

import "sync/atomic"

// Stats counts the vault's durable writes since Open, to show what group
// commits save.
type Stats struct {
	// DurableWrites counts durable writes: a whole file (content or
	// extracted text: on the local backend an fsync of the file and of its
	// directory), or a group commit's pack region (on the local backend
	// one fdatasync of the open pack; on S3 one PUT).
	DurableWrites int64
	// PackWrites counts the group commits among them.
	PackWrites int64
	// Committed counts objects committed with new content or a reference to
	// stored content; Packed those whose content went into a pack.
	Committed, Packed int64
}

// AssetsPerDurableWrite is Committed / DurableWrites.
func (s Stats) AssetsPerDurableWrite() float64 {
	if s.DurableWrites == 0 {
		return 0
	}
	return float64(s.Committed) / float64(s.DurableWrites)
}

type stats struct {
	durable, packs, committedN, packed atomic.Int64
}

// durableWrite counts one durable file write, a pack or not.
func (s *stats) durableWrite(pack bool) {
	s.durable.Add(1)
	if pack {
		s.packs.Add(1)
	}
}

func (s *stats) committed(n, packed int) {
	s.committedN.Add(int64(n))
	s.packed.Add(int64(packed))
}

// Stats returns the counters.
func (v *Vault) Stats() Stats {
	return Stats{
		DurableWrites: v.stats.durable.Load(),
		PackWrites:    v.stats.packs.Load(),
		Committed:     v.stats.committedN.Load(),
		Packed:        v.stats.packed.Load(),
	}
}
