package connectflow

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/providers"
	"svc.dev/svc/server/internal/rpc"
)

// createSource connects a local folder (vendor_d_local) or an S3-compatible bucket
// (object_store_compatible) for the signed-in user (POST /v1/sources). A folder must be under
// one of the server's local roots, symbolic links resolved; a bucket's host must be a public
// address unless the server runs for development. Test mode, which works on simulated data,
// connects neither. Nothing is stored when the request is refused.
func (f *Flow) createSource(ctx context.Context, req *svcv1.CreateSourceRequest) (*svcv1.Source, error) {
	c := rpc.From(ctx)
	if c.Tenant.Mode == platform.ModeTest {
		return nil, rpc.Invalid("provider", "cannot be connected in test mode, which works on simulated sources; connect it without Svc-Mode: test")
	}
	var spec svc.SourceSpec
	var err error
	switch name := providers.Name(rpc.EnumWire(req.GetProvider())); name {
	case providers.VendorDLocal:
		spec, err = f.folderSpec(req)
	case providers.ObjectStoreCompatible:
		spec, err = f.bucketSpec(ctx, req)
	default:
		return nil, rpc.Invalid("provider", "must be vendor_d_local or object_store_compatible; accounts that sign in at their provider connect with POST /v1/provider-authorizations")
	}
	if err != nil {
		return nil, err
	}
	if req.DisplayName != nil {
		spec.DisplayName = req.GetDisplayName()
	}
	if spec.Provider == providers.ObjectStoreCompatible {
		// A bucket is reached before anything is recorded: wrong credentials or a missing
		// bucket are the request's fault, and leave nothing behind.
		err := f.cfg.Sources.Probe(ctx, spec)
		switch {
		case errors.Is(err, providers.ErrNotFound):
			return nil, rpc.Invalid("url", "names a bucket that does not exist at that host")
		case errors.Is(err, providers.ErrPermission):
			return nil, rpc.Invalid("access_key_id", "was refused by the bucket (with secret_access_key)")
		case err != nil:
			return nil, fmt.Errorf("reach bucket: %w", err)
		}
	}
	return f.cfg.Sources.Connect(ctx, c.Tenant, spec)
}

// folderSpec is the source of a local folder request.
func (f *Flow) folderSpec(req *svcv1.CreateSourceRequest) (svc.SourceSpec, error) {
	if req.Url != nil || req.AccessKeyId != nil || req.SecretAccessKey != nil || req.Region != nil || req.Insecure != nil {
		return svc.SourceSpec{}, rpc.Invalid("provider", "vendor_d_local takes path only")
	}
	p := req.GetPath()
	if p == "" {
		return svc.SourceSpec{}, rpc.Invalid("path", "is required for vendor_d_local")
	}
	if !filepath.IsAbs(p) {
		return svc.SourceSpec{}, rpc.Invalid("path", "must be an absolute path")
	}
	outside := rpc.Invalid("path", "is not under a folder this server lets users connect (svc serve --local-root)")
	if len(f.cfg.LocalRoots) == 0 {
		return svc.SourceSpec{}, rpc.Invalid("path", "cannot be connected: this server lets users connect no local folder (svc serve --local-root)")
	}
	if f.localRoot(filepath.Clean(p), false) == "" {
		return svc.SourceSpec{}, outside
	}
	// Symbolic links resolved: a link inside a root may point anywhere.
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return svc.SourceSpec{}, rpc.Invalid("path", "is not a folder that exists")
	}
	if f.localRoot(real, true) == "" {
		return svc.SourceSpec{}, outside
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return svc.SourceSpec{}, rpc.Invalid("path", "is not a folder")
	}
	return svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": real}, Kind: "folder", DisplayName: real}, nil
}

// localRoot returns the local root p is in ("" if none), comparing with the roots' resolved
// paths when resolved is set.
func (f *Flow) localRoot(p string, resolved bool) string {
	for _, root := range f.cfg.LocalRoots {
		root = filepath.Clean(root)
		if resolved {
			r, err := filepath.EvalSymlinks(root)
			if err != nil {
				continue
			}
			root = r
		}
		if p == root || strings.HasPrefix(p, strings.TrimSuffix(root, string(filepath.Separator))+string(filepath.Separator)) {
			return root
		}
	}
	return ""
}

// bucketSpec is the source of a bucket request.
func (f *Flow) bucketSpec(ctx context.Context, req *svcv1.CreateSourceRequest) (svc.SourceSpec, error) {
	if req.Path != nil {
		return svc.SourceSpec{}, rpc.Invalid("path", "is for vendor_d_local; a bucket is named by url")
	}
	if req.GetUrl() == "" {
		return svc.SourceSpec{}, rpc.Invalid("url", "is required for object_store_compatible: s3://HOST[:PORT]/BUCKET[/PREFIX]")
	}
	host, ref, err := parseBucketURL(req.GetUrl())
	if err != nil {
		return svc.SourceSpec{}, rpc.Invalid("url", err.Error())
	}
	if req.GetAccessKeyId() == "" {
		return svc.SourceSpec{}, rpc.Invalid("access_key_id", "is required for object_store_compatible")
	}
	if req.GetSecretAccessKey() == "" {
		return svc.SourceSpec{}, rpc.Invalid("secret_access_key", "is required for object_store_compatible")
	}
	private, err := privateHost(ctx, host)
	if err != nil {
		return svc.SourceSpec{}, rpc.Invalid("url", "names a host that does not resolve")
	}
	if private && !f.cfg.Dev {
		return svc.SourceSpec{}, rpc.Invalid("url", "names a loopback, private or link-local address, which this server does not reach for users (svc serve --dev does)")
	}
	if req.GetInsecure() && !private {
		return svc.SourceSpec{}, rpc.Invalid("insecure", "is allowed for loopback and private addresses only: a bucket's credentials never cross a network in clear")
	}
	cfg := providers.Config{"endpoint": host, "access_key": req.GetAccessKeyId(), "secret_key": req.GetSecretAccessKey(),
		"secure": strconv.FormatBool(!req.GetInsecure())}
	if req.Region != nil {
		cfg["region"] = req.GetRegion()
	}
	return svc.SourceSpec{Provider: providers.ObjectStoreCompatible, SourceRef: ref, Config: cfg, Kind: "bucket",
		DisplayName: "s3://" + host + "/" + ref}, nil
}

// parseBucketURL reads s3://HOST[:PORT]/BUCKET[/PREFIX] into the endpoint (HOST[:PORT]) and
// the source reference (BUCKET[/PREFIX]).
func parseBucketURL(raw string) (host, ref string, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" || u.Opaque != "" {
		return "", "", errors.New("must be s3://HOST[:PORT]/BUCKET[/PREFIX]")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", "", errors.New("must be s3://HOST[:PORT]/BUCKET[/PREFIX], with no user, query or fragment (credentials go in access_key_id and secret_access_key)")
	}
	if u.Hostname() == "" {
		return "", "", errors.New("must name a host: s3://HOST[:PORT]/BUCKET[/PREFIX]")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", "", errors.New("has a port outside 1-65535")
		}
	}
	ref = strings.Trim(u.Path, "/")
	bucket, _, _ := strings.Cut(ref, "/")
	if bucket == "" {
		return "", "", errors.New("must name a bucket: s3://HOST[:PORT]/BUCKET[/PREFIX]")
	}
	return u.Host, ref, nil
}

// privateHost reports whether host (HOST[:PORT]) is, or resolves to, a loopback, private,
// link-local or unspecified address: the addresses a hosted server must not be made to reach
// for its users (server-side request forgery).
func privateHost(ctx context.Context, hostport string) (bool, error) {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]") // an IPv6 literal without a port
	}
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true, nil
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return false, err
		}
		addrs = ips
	}
	for _, a := range addrs {
		a = a.Unmap()
		if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsUnspecified() {
			return true, nil
		}
	}
	return false, nil
}
