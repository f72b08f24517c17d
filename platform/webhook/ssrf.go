package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrBlockedAddress is returned (wrapped) when a webhook URL's host is, or resolves to, an
// address webhooks may not reach: loopback (unless allowed for development), private,
// link-local, unspecified, multicast, shared (CGNAT), reserved, or a cloud metadata address.
var ErrBlockedAddress = errors.New("address not allowed for webhooks")

// Resolver looks up a host's addresses; *net.Resolver satisfies it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Guard keeps webhook deliveries away from the service's own network (server-side request
// forgery). CheckURL runs when a URL is registered; Control runs in the dialer on the address
// actually connected to, so a name that resolved to a public address at registration and to
// an internal one later (DNS rebinding) is still refused.
type Guard struct {
	// AllowLoopback lets receivers on 127.0.0.0/8 and ::1 through (svc serve --dev), so that
	// local receivers work. Every other rule still holds.
	AllowLoopback bool
	// Resolver resolves names at registration; nil means net.DefaultResolver.
	Resolver Resolver
}

type blockedPrefix struct {
	prefix netip.Prefix
	what   string
}

func prefixes(what string, ps ...string) []blockedPrefix {
	out := make([]blockedPrefix, len(ps))
	for i, p := range ps {
		out[i] = blockedPrefix{netip.MustParsePrefix(p), what}
	}
	return out
}

// blocked lists what a receiver may not be, most specific first so that errors name the
// reason (a metadata address before the link-local range that contains it).
var blocked = concat(
	prefixes("a cloud metadata address", "169.254.169.254/32", "169.254.170.2/32", "fd00:ec2::254/128", "100.100.100.200/32"),
	prefixes("unspecified", "0.0.0.0/8", "::/128"),
	prefixes("private (RFC 1918)", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"),
	prefixes("shared address space (CGNAT, RFC 6598)", "100.64.0.0/10"),
	prefixes("link-local", "169.254.0.0/16", "fe80::/10"),
	prefixes("unique local (RFC 4193)", "fc00::/7"),
	prefixes("multicast", "224.0.0.0/4", "ff00::/8"),
	prefixes("reserved", "240.0.0.0/4", "192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15", "198.51.100.0/24",
		"203.0.113.0/24", "192.88.99.0/24", "::/96", "100::/64", "2001::/32", "2001:db8::/32", "64:ff9b:1::/48", "fec0::/10"),
)

func concat(lists ...[]blockedPrefix) []blockedPrefix {
	var out []blockedPrefix
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// CheckAddr returns an error wrapping ErrBlockedAddress if a receiver may not be at a.
// IPv4 addresses embedded in IPv6 (mapped, NAT64, 6to4) are checked as IPv4.
func (g *Guard) CheckAddr(a netip.Addr) error {
	a = a.WithZone("")
	if a.Is4In6() {
		a = a.Unmap()
	}
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			return g.CheckAddr(netip.AddrFrom4([4]byte(b[12:16])))
		case sixToFour.Contains(a):
			return g.CheckAddr(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	if a.IsLoopback() {
		if g.AllowLoopback {
			return nil
		}
		return fmt.Errorf("%w: %s is loopback", ErrBlockedAddress, a)
	}
	for _, p := range blocked {
		if p.prefix.Contains(a) {
			return fmt.Errorf("%w: %s is %s", ErrBlockedAddress, a, p.what)
		}
	}
	if a.Is4() && a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return fmt.Errorf("%w: %s is broadcast", ErrBlockedAddress, a)
	}
	return nil
}

// Control is a net.Dialer Control hook: it refuses to connect to a blocked address. address
// is the resolved "ip:port" the dialer is about to connect to.
func (g *Guard) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot parse %q", ErrBlockedAddress, address)
	}
	return g.CheckAddr(ap.Addr())
}

// MaxURLLength bounds a webhook URL.
const MaxURLLength = 2048

// CheckURL checks a webhook URL for registration: http or https, a host, no credentials, no
// fragment, and a host that is, or resolves only to, allowed addresses. Format errors wrap
// ErrInvalidURL, refused addresses ErrBlockedAddress.
func (g *Guard) CheckURL(ctx context.Context, raw string) error {
	if len(raw) > MaxURLLength {
		return fmt.Errorf("%w: longer than %d characters", ErrInvalidURL, MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidURL, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%w: scheme must be http or https", ErrInvalidURL)
	case u.Opaque != "" || u.Host == "":
		return fmt.Errorf("%w: no host", ErrInvalidURL)
	case u.User != nil:
		return fmt.Errorf("%w: credentials in the URL are not allowed", ErrInvalidURL)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return fmt.Errorf("%w: fragments are not allowed", ErrInvalidURL)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("%w: no host", ErrInvalidURL)
	}
	if p := u.Port(); p != "" {
		if n, err := net.LookupPort("tcp", p); err != nil || n == 0 {
			return fmt.Errorf("%w: bad port %q", ErrInvalidURL, p)
		}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return g.CheckAddr(a)
	}
	r := g.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return fmt.Errorf("%w: host %q does not resolve", ErrInvalidURL, host)
	}
	for _, a := range addrs {
		if err := g.CheckAddr(a); err != nil {
			return fmt.Errorf("host %s: %w", host, err)
		}
	}
	return nil
}
