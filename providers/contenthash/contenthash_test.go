package contenthash_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"testing"

	"svc.dev/svc/providers/contenthash"
)

// quickXorVectors are outputs of Microsoft's reference QuickXorHash (C#) on
// the given inputs, as published with rclone's OneDrive backend tests
// (backend/onedrive/quickxorhash, MIT licence); both are base64.
var quickXorVectors = []struct{ in, out string }{
	{``, "AAAAAAAAAAAAAAAAAAAAAAAAAAA="},
	{`Sg==`, "SgAAAAAAAAAAAAAAAQAAAAAAAAA="},
	{`tbQ=`, "taAFAAAAAAAAAAAAAgAAAAAAAAA="},
	{`J9iPGCbfZSTNyw==`, "J8DGIzBggm+UgQTNUgYAAAAAAAA="},
	{`2fuxhBJXtpWFe8dOfdGeHw==`, "O9tHLAghgSvYohKFyMMxnNCHaHg="},
	{`T6LYJIfDh81JrAK309H2JMJTXis=`, "zBTHrspn3mEcohlJdIUAbjGNaNg="},
	{`Mb7EGva2rEE5fENDL85P+BsapHEEjv2/siVhKjvAQe02feExVOQSkfmuYzU/kTF1MaKjPmKF/w+cbvwfdWL8aQ==`, "n1anP5NfvD4XDYWIeRPW3ZkPv1Y="},
	{`jyibxJSzO6ZiZ0O1qe3tG/bvIAYssvukh9suIT5wEy1JBINVgPiqdsTW0cOpP0aUfP7mgqLfADkzI/m/GgCuVhr8oFLrOCoTx1/psBOWwhltCbhUx51Icm9aH8tY4Z3ccU+6BKpYQkLCy0B/A9Zc`, "hZfLIilSITC6N3e3tQ/iSgEzkto="},
}

func sumInPieces(h hash.Hash, data []byte, piece int) []byte {
	h.Reset()
	for i := 0; i < len(data); i += piece {
		h.Write(data[i:min(len(data), i+piece)])
	}
	return h.Sum(nil)
}

func TestQuickXorVectors(t *testing.T) {
	for _, v := range quickXorVectors {
		in, err := base64.StdEncoding.DecodeString(v.in)
		if err != nil {
			t.Fatal(err)
		}
		for _, piece := range []int{1, 3, 7, 64, 1 << 20} {
			got := base64.StdEncoding.EncodeToString(sumInPieces(contenthash.NewQuickXor(), in, piece))
			if got != v.out {
				t.Errorf("%d bytes in pieces of %d: %s, want %s", len(in), piece, got, v.out)
			}
		}
	}
}

// TestDropbox checks the content hash against its published definition
// (SHA-256 of the concatenated SHA-256s of 4 MiB blocks) at the block
// boundaries, and against the empty file's hash in the API spec's
// FileMetadata example.
func TestDropbox(t *testing.T) {
	const emptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	if got := hex.EncodeToString(sumInPieces(contenthash.NewDropbox(), nil, 1)); got != emptyHash {
		t.Errorf("empty: %s", got)
	}
	data := make([]byte, 2*contenthash.DropboxBlockSize+5)
	for i := range data {
		data[i] = byte(i*7 + i/4096)
	}
	for _, n := range []int{1, contenthash.DropboxBlockSize - 1, contenthash.DropboxBlockSize, contenthash.DropboxBlockSize + 1, len(data)} {
		var digests []byte
		for off := 0; off < n; off += contenthash.DropboxBlockSize {
			b := sha256.Sum256(data[off:min(n, off+contenthash.DropboxBlockSize)])
			digests = append(digests, b[:]...)
		}
		want := sha256.Sum256(digests)
		for _, piece := range []int{4096, 1 << 20, 3 << 20, n} {
			h := contenthash.NewDropbox()
			got := sumInPieces(h, data[:n], piece)
			if !bytes.Equal(got, want[:]) {
				t.Errorf("%d bytes in pieces of %d: %x, want %x", n, piece, got, want)
			}
			if again := h.Sum(nil); !bytes.Equal(again, got) {
				t.Errorf("%d bytes: Sum changed the state", n)
			}
		}
	}
}

// go test -bench . ./providers/contenthash/
func BenchmarkQuickXor(b *testing.B) {
	data := make([]byte, 1<<20)
	b.SetBytes(int64(len(data)))
	h := contenthash.NewQuickXor()
	for b.Loop() {
		h.Write(data)
	}
}

func BenchmarkDropbox(b *testing.B) {
	data := make([]byte, 1<<20)
	b.SetBytes(int64(len(data)))
	h := contenthash.NewDropbox()
	for b.Loop() {
		h.Write(data)
	}
}
