package vault

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"
)

func TestReadAllSized(t *testing.T) {
	content := bytes.Repeat([]byte("svc vault "), 700) // 7,000 bytes
	for _, tc := range []struct {
		name string
		size int64
	}{{"exact", 7000}, {"unknown", -1}, {"smaller than announced", 9000}, {"larger than announced", 100}, {"zero announced", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAllSized(iotest.HalfReader(bytes.NewReader(content)), tc.size)
			if err != nil || !bytes.Equal(got, content) {
				t.Fatalf("read %d bytes, err %v; want the %d bytes", len(got), err, len(content))
			}
		})
	}
	// Content of the announced size is read into one buffer of that size plus one byte.
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := readAllSized(bytes.NewReader(content), int64(len(content))); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2 {
		t.Errorf("%v allocations to read content of its announced size; want at most 2", allocs)
	}
	if _, err := readAllSized(iotest.ErrReader(io.ErrUnexpectedEOF), 10); err != io.ErrUnexpectedEOF {
		t.Errorf("a failing reader: got %v", err)
	}
}

// An in-memory reader sizes the buffer when the request does not.
func TestSizeOf(t *testing.T) {
	r := bytes.NewReader(bytes.Repeat([]byte("x"), 5000))
	r.Seek(1000, io.SeekStart)
	if got := sizeOf(r); got != 4000 {
		t.Errorf("bytes.Reader: %d", got)
	}
	if got := sizeOf(iotest.HalfReader(r)); got != -1 {
		t.Errorf("a reader that does not tell: %d", got)
	}
}
