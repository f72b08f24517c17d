package s3

import (
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	env := map[string]string{"AWS_ACCESS_KEY_ID": "ak", "AWS_SECRET_ACCESS_KEY": "sk"}
	getenv := func(k string) string { return env[k] }
	cfg, err := ParseURL("s3://127.0.0.1:7070/vault/cold?insecure=true&region=eu-west-1", getenv)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Endpoint: "127.0.0.1:7070", Bucket: "vault", Prefix: "cold/", Secure: false, Region: "eu-west-1", AccessKey: "ak", SecretKey: "sk"}
	if cfg != want {
		t.Fatalf("got %+v\nwant %+v", cfg, want)
	}
	if cfg, err := ParseURL("s3://s3.example.com/b", getenv); err != nil || !cfg.Secure || cfg.Prefix != "" || cfg.Bucket != "b" {
		t.Fatalf("plain bucket: %+v, %v", cfg, err)
	}
	for raw, msg := range map[string]string{
		"http://h/b":                 "want s3://",
		"s3:///b":                    "want s3://",
		"s3://h":                     "no bucket",
		"s3://ak:sk@h/b":             "not in the URL",
		"s3://h/b?secure=false":      "unknown parameter",
		"s3://h/b?insecure=maybe":    "insecure",
		"s3://h/b?insecure=true&x=1": "unknown parameter",
	} {
		if _, err := ParseURL(raw, getenv); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want an error saying %q", raw, err, msg)
		}
	}
	if _, err := ParseURL("s3://h/b", func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
		t.Errorf("no credentials: %v", err)
	}
}
