package connectflow

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestParseBucketURL(t *testing.T) {
	good := map[string][2]string{
		"s3://s3.example.com/photos":             {"s3.example.com", "photos"},
		"s3://s3.example.com:9000/photos/2024/":  {"s3.example.com:9000", "photos/2024"},
		"s3://[2001:db8::1]:9000/b/p":            {"[2001:db8::1]:9000", "b/p"},
		"s3://s3.example.com/bucket/deep/prefix": {"s3.example.com", "bucket/deep/prefix"},
	}
	for raw, want := range good {
		host, ref, err := parseBucketURL(raw)
		if err != nil || host != want[0] || ref != want[1] {
			t.Errorf("%s: %q %q %v, want %q %q", raw, host, ref, err, want[0], want[1])
		}
	}
	for _, raw := range []string{"", "s3:bucket", "https://h/b", "s3:///b", "s3://h", "s3://h/", "s3://u:p@h/b",
		"s3://h/b?x=1", "s3://h/b#f", "s3://h:0/b", "s3://h:70000/b", "s3://h:port/b"} {
		if _, _, err := parseBucketURL(raw); err == nil {
			t.Errorf("%q: accepted", raw)
		}
	}
}

func TestPrivateHost(t *testing.T) {
	ctx := context.Background()
	for host, want := range map[string]bool{
		"127.0.0.1:9000": true, "localhost": true, "LOCALHOST:80": true, "a.localhost": true, "10.0.0.1": true,
		"192.168.1.2:9000": true, "169.254.169.254": true, "[::1]:9000": true, "[::ffff:127.0.0.1]": true, "0.0.0.0": true,
		"[fe80::1]": true, "203.0.113.9": false, "[2001:db8::1]:443": false, "8.8.8.8:443": false,
	} {
		got, err := privateHost(ctx, host)
		if err != nil || got != want {
			t.Errorf("%s: %v %v, want %v", host, got, err, want)
		}
	}
	if _, err := privateHost(ctx, "no-such-host.invalid"); err == nil {
		t.Error("a name that does not resolve was accepted")
	}
}

func TestLocalRoot(t *testing.T) {
	root := t.TempDir()
	other := t.TempDir()
	os.Mkdir(filepath.Join(root, "in"), 0o700)
	f := New(Config{LocalRoots: []string{root + string(filepath.Separator)}})
	for p, want := range map[string]bool{
		root: true, filepath.Join(root, "in"): true, filepath.Join(root, "in", "x"): true,
		other: false, root + "-sibling": false, filepath.Dir(root): false,
	} {
		if got := f.localRoot(p, false) != ""; got != want {
			t.Errorf("%s: %v, want %v", p, got, want)
		}
	}
}

func TestErrorCode(t *testing.T) {
	for in, want := range map[string]string{"access_denied": "access_denied", "<script>": "script", "": "error",
		"a b\nc": "abc", string(make([]byte, 100)): "error"} {
		if got := errorCode(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
	long := errorCode(string(make([]rune, 0)) + "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz")
	if len(long) != 40 {
		t.Errorf("long code kept %d characters", len(long))
	}
}
