package s3

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// ParseURL reads a backend's location from a URL, as `svc serve --vault-hot/--vault-cold`
// take it: s3://HOST[:PORT]/BUCKET[/PREFIX][?insecure=true][&region=REGION]. The credentials
// come from the environment (getenv): AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, never from
// the URL, so they do not end up in process listings or logs. insecure=true speaks plain
// HTTP, for a server on loopback.
func ParseURL(raw string, getenv func(string) string) (Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Config{}, fmt.Errorf("s3 URL: %w", err)
	}
	if u.Scheme != "s3" || u.Host == "" {
		return Config{}, fmt.Errorf("s3 URL %q: want s3://HOST[:PORT]/BUCKET[/PREFIX]", raw)
	}
	if u.User != nil {
		return Config{}, errors.New("s3 URL: credentials go in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, not in the URL")
	}
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if bucket == "" {
		return Config{}, fmt.Errorf("s3 URL %q: no bucket", raw)
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	cfg := Config{Endpoint: u.Host, Bucket: bucket, Prefix: prefix, Secure: true, Region: u.Query().Get("region"),
		AccessKey: getenv("AWS_ACCESS_KEY_ID"), SecretKey: getenv("AWS_SECRET_ACCESS_KEY")}
	for k, v := range u.Query() {
		switch k {
		case "region":
		case "insecure":
			insecure, err := strconv.ParseBool(v[0])
			if err != nil {
				return Config{}, fmt.Errorf("s3 URL: insecure=%q: %w", v[0], err)
			}
			cfg.Secure = !insecure
		default:
			return Config{}, fmt.Errorf("s3 URL: unknown parameter %q (known: insecure, region)", k)
		}
	}
	if cfg.AccessKey == "" || cfg.SecretKey == "" {
		return Config{}, errors.New("s3 URL: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	return cfg, nil
}
