package seal

import (
	"crypto/cipher"
	"crypto/rand"
	"fmt"
)

// Seal returns the sealed version 1 stream of plain, appended to dst: the
// in-memory form used for small content before version 3.
func Seal(dst, plain, key []byte, purpose string) ([]byte, error) {
	var hdr [HeaderSize]byte
	hdr[0] = version
	if _, err := rand.Read(hdr[1:]); err != nil {
		return nil, err
	}
	a, err := streamAEAD(key, hdr[1:], purpose)
	if err != nil {
		return nil, err
	}
	dst = append(dst, hdr[:]...)
	return sealChunks(dst, plain, a, nonce, nil, nil), nil
}

// SealBound returns the sealed version 3 stream of plain, every chunk bound
// to b (whose Digest must be plain's SHA-256, or what plain belongs to),
// appended to dst.
func SealBound(dst, plain, key []byte, purpose string, b Binding) ([]byte, error) {
	if err := validBinding(&b, purpose); err != nil {
		return nil, err
	}
	var hdr [headerSizeBound]byte
	hdr[0] = versionBound
	if _, err := rand.Read(hdr[2:]); err != nil {
		return nil, err
	}
	a, err := formatAEAD(versionBound, key, hdr[2:], purpose)
	if err != nil {
		return nil, err
	}
	aad := b.aad(nil, versionBound, 0, purpose, true)
	dst = append(dst, hdr[:]...)
	return sealChunks(dst, plain, a, nonce, aad, aad), nil
}

// sealChunks appends plain sealed chunk by chunk with a, each chunk's nonce
// made by nonceOf, with associated data aad (aadLast for the last chunk).
func sealChunks(dst, plain []byte, a cipher.AEAD, nonceOf func(n *[12]byte, counter uint64, last bool), aad, aadLast []byte) []byte {
	var n [12]byte
	for counter := uint64(0); ; counter++ {
		last := len(plain) <= ChunkSize
		c := plain
		ad := aad
		if !last {
			c = plain[:ChunkSize]
		} else {
			ad = aadLast
		}
		nonceOf(&n, counter, last)
		dst = a.Seal(dst, n[:], c, ad)
		if last {
			return dst
		}
		plain = plain[ChunkSize:]
	}
}

// Open opens a sealed stream of version 1 or 2 held in memory, appending the
// plaintext to dst (bound streams need OpenBound).
func Open(dst, data, key []byte, purpose string) ([]byte, error) {
	return open(dst, data, key, purpose, nil, 0)
}

// OpenBound opens a sealed stream of any version held in memory, as
// NewBoundReader would read it, appending the plaintext to dst.
func OpenBound(dst, data, key []byte, purpose string, b Binding, require byte) ([]byte, error) {
	return open(dst, data, key, purpose, &b, require)
}

func open(dst, data, key []byte, purpose string, b *Binding, require byte) ([]byte, error) {
	h, need, err := parseHeader(data)
	if err != nil {
		return nil, err
	}
	if need > len(data) || len(data) < h.size+TagSize {
		return nil, fmt.Errorf("seal: truncated stream: %w", ErrAuth)
	}
	a, aad, aadLast, _, err := h.keys(key, purpose, b, require)
	if err != nil {
		return nil, err
	}
	grouped := h.version == versionGroup || h.version == versionGroupBound
	return openChunks(dst, data[h.size:], a, grouped, h.entry, aad, aadLast)
}

// openChunks opens the chunks of a stream (after its header) under a.
func openChunks(dst, data []byte, a cipher.AEAD, grouped bool, entry uint32, aad, aadLast []byte) ([]byte, error) {
	var n [12]byte
	var counter uint64
	var err error
	for {
		last := len(data) <= sealed
		c := data
		ad := aad
		if !last {
			c = data[:sealed]
		} else {
			ad = aadLast
		}
		if len(c) < TagSize {
			return nil, fmt.Errorf("seal: truncated stream: %w", ErrAuth)
		}
		if grouped {
			if counter >= maxGroupChunks {
				return nil, fmt.Errorf("seal: stream too long: %w", ErrAuth)
			}
			groupNonce(&n, entry, counter, last)
		} else {
			nonce(&n, counter, last)
		}
		before := len(dst)
		dst, err = a.Open(dst, n[:], c, ad)
		if err != nil {
			return nil, fmt.Errorf("seal: chunk %d: %w", counter, ErrAuth)
		}
		if !last && len(dst)-before != ChunkSize {
			return nil, fmt.Errorf("seal: short chunk %d: %w", counter, ErrAuth)
		}
		if last {
			return dst, nil
		}
		data = data[sealed:]
		counter++
	}
}
