// Package contenthash implements the content hashes two vendors publish
// for the files they store, so that content fetched from them can be
// verified against the vendor's own word for it:
//
//   - QuickXor: Microsoft's QuickXorHash, the one hash OneDrive reports for
//     every file (driveItem file.hashes.quickXorHash, base64 of 20 bytes).
//   - Dropbox: the Dropbox API's content_hash (FileMetadata.content_hash,
//     lowercase hex of 32 bytes).
//
// Both are hash.Hash values: write the content in pieces of any size.
package contenthash

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"hash"
)

// QuickXorSize is the length of a QuickXorHash in bytes.
const QuickXorSize = 20

// quickXor is Microsoft's QuickXorHash: a 160-bit state into which byte i
// of the content is XORed at bit offset (11*i) mod 160 (bits numbered from
// the least significant bit of the state's first byte, a byte spanning the
// end wrapping to the start), after which the content's length, as a 64-bit
// little-endian integer, is XORed into the state's last 8 bytes.
//
// Byte i's offset depends only on i mod 160, so Write XORs the content
// into 160 one-byte lanes (lane i mod 160), which crypto/subtle does many
// bytes at a time, and Sum spreads each lane to its offset.
type quickXor struct {
	lanes [lanes]byte
	pos   int    // the lane of the next byte: n mod 160
	n     uint64 // bytes written
}

const lanes = QuickXorSize * 8

// NewQuickXor returns a QuickXorHash.
func NewQuickXor() hash.Hash { return new(quickXor) }

func (q *quickXor) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), lanes-q.pos)
		subtle.XORBytes(q.lanes[q.pos:q.pos+k], q.lanes[q.pos:q.pos+k], p[:k])
		p = p[k:]
		q.pos = (q.pos + k) % lanes
	}
	q.n += uint64(n)
	return n, nil
}

func (q *quickXor) Sum(b []byte) []byte {
	var out [QuickXorSize]byte
	for k, v := range q.lanes {
		off := (11 * k) % lanes
		i, bit := off/8, uint(off%8)
		w := uint16(v) << bit
		out[i] ^= byte(w)
		if bit != 0 {
			out[(i+1)%QuickXorSize] ^= byte(w >> 8)
		}
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], q.n)
	for i, x := range n {
		out[QuickXorSize-8+i] ^= x
	}
	return append(b, out[:]...)
}

func (q *quickXor) Reset()         { *q = quickXor{} }
func (q *quickXor) Size() int      { return QuickXorSize }
func (q *quickXor) BlockSize() int { return 64 }

// DropboxBlockSize is the block size of the Dropbox content hash: 4 MiB.
const DropboxBlockSize = 4 << 20

// dropbox is the Dropbox content_hash: the content split into 4 MiB blocks
// (the last one shorter), the SHA-256 of each, and the SHA-256 of those
// digests concatenated.
type dropbox struct {
	overall hash.Hash // over the block digests
	block   hash.Hash // the current block
	inBlock int
}

// NewDropbox returns a Dropbox content hash.
func NewDropbox() hash.Hash { return &dropbox{overall: sha256.New(), block: sha256.New()} }

func (d *dropbox) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), DropboxBlockSize-d.inBlock)
		d.block.Write(p[:k])
		d.inBlock += k
		p = p[k:]
		if d.inBlock == DropboxBlockSize {
			d.overall.Write(d.block.Sum(nil))
			d.block.Reset()
			d.inBlock = 0
		}
	}
	return n, nil
}

func (d *dropbox) Sum(b []byte) []byte {
	overall := d.overall
	if d.inBlock > 0 {
		// Sum must not change the state: hash a copy's tail.
		c := sha256.New()
		st, _ := d.overall.(interface{ MarshalBinary() ([]byte, error) }).MarshalBinary()
		_ = c.(interface{ UnmarshalBinary([]byte) error }).UnmarshalBinary(st)
		c.Write(d.block.Sum(nil))
		overall = c
	}
	return overall.Sum(b)
}

func (d *dropbox) Reset() {
	d.overall.Reset()
	d.block.Reset()
	d.inBlock = 0
}

func (d *dropbox) Size() int      { return sha256.Size }
func (d *dropbox) BlockSize() int { return sha256.BlockSize }
