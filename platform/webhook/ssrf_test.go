package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"svc.dev/svc/platform"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/platform/webhook"
)

// fakeDNS answers registration lookups from a table; connections still use the system
// resolver, which is how a rebinding name behaves.
type fakeDNS map[string][]string

func (f fakeDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	addrs, ok := f[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, a := range addrs {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

func TestGuardAddresses(t *testing.T) {
	prod, dev := &webhook.Guard{}, &webhook.Guard{AllowLoopback: true}
	for _, c := range []struct {
		addr      string
		prod, dev bool // allowed?
		why       string
	}{
		{"93.184.216.34", true, true, ""},
		{"2606:2800:220:1:248:1893:25c8:1946", true, true, ""},
		{"8.8.8.8", true, true, ""},
		{"127.0.0.1", false, true, "loopback"},
		{"127.9.9.9", false, true, "loopback"},
		{"::1", false, true, "loopback"},
		{"::ffff:127.0.0.1", false, true, "loopback"},
		{"10.0.0.1", false, false, "private"},
		{"172.16.5.4", false, false, "private"},
		{"172.31.255.255", false, false, "private"},
		{"172.32.0.1", true, true, ""},
		{"192.168.1.1", false, false, "private"},
		{"::ffff:192.168.1.1", false, false, "private"},
		{"fd12:3456::1", false, false, "unique local"},
		{"fc00::1", false, false, "unique local"},
		{"169.254.169.254", false, false, "metadata"},
		{"fd00:ec2::254", false, false, "metadata"},
		{"169.254.1.1", false, false, "link-local"},
		{"fe80::1", false, false, "link-local"},
		{"fe80::1%eth0", false, false, "link-local"},
		{"0.0.0.0", false, false, "unspecified"},
		{"::", false, false, "unspecified"},
		{"224.0.0.1", false, false, "multicast"},
		{"ff02::1", false, false, "multicast"},
		{"100.64.0.1", false, false, "CGNAT"},
		{"100.127.255.254", false, false, "CGNAT"},
		{"100.128.0.1", true, true, ""},
		{"255.255.255.255", false, false, "reserved"},
		{"64:ff9b::a00:1", false, false, "private"},    // NAT64 of 10.0.0.1
		{"64:ff9b::5db8:d822", true, true, ""},         // NAT64 of 93.184.216.34
		{"2002:7f00:1::", false, true, "loopback"},     // 6to4 of 127.0.0.1
		{"2002:a9fe:a9fe::", false, false, "metadata"}, // 6to4 of 169.254.169.254
		{"::127.0.0.1", false, false, "reserved"},      // deprecated IPv4-compatible
	} {
		a := netip.MustParseAddr(c.addr)
		errP, errD := prod.CheckAddr(a), dev.CheckAddr(a)
		if (errP == nil) != c.prod || (errD == nil) != c.dev {
			t.Errorf("%s: production %v, dev %v; want allowed %v / %v", c.addr, errP, errD, c.prod, c.dev)
			continue
		}
		if errP != nil && (!errors.Is(errP, webhook.ErrBlockedAddress) || !strings.Contains(errP.Error(), c.why)) {
			t.Errorf("%s: %v, want ErrBlockedAddress naming %q", c.addr, errP, c.why)
		}
	}
}

func TestRegistrationRefusesInternalAddresses(t *testing.T) {
	e := newEnv(t, func(o *webhook.Options) {
		o.Dev = false
		o.Resolver = fakeDNS{
			"hooks.example.com":    {"93.184.216.34"},
			"internal.example.com": {"10.0.0.5"},
			"mixed.example.com":    {"93.184.216.34", "127.0.0.1"},
			"metadata.example.com": {"169.254.169.254"},
			"loopback.example.com": {"127.0.0.1"},
		}
	})
	create := func(u string) error {
		_, _, err := e.eng.Create(e.ctx, e.app, webhook.Params{URL: u, EventTypes: []string{"*"}, Mode: platform.ModeLive})
		return err
	}
	for _, u := range []string{"https://hooks.example.com/svc", "http://hooks.example.com:8080/a?b=c", "https://93.184.216.34/"} {
		if err := create(u); err != nil {
			t.Errorf("%s refused: %v", u, err)
		}
	}
	for _, u := range []string{
		"http://127.0.0.1:8080/", "http://[::1]/", "http://localhost/" /* via the fake: no such host */, "http://10.1.2.3/",
		"http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/", "http://[::ffff:127.0.0.1]/",
		"http://100.64.1.1/", "http://[fe80::1]/", "http://0.0.0.0/", "http://224.0.0.1/",
		"https://internal.example.com/", "https://mixed.example.com/", "https://metadata.example.com/", "https://loopback.example.com/",
	} {
		err := create(u)
		var fe *webhook.FieldError
		if !errors.Is(err, webhook.ErrInvalid) || !errors.As(err, &fe) || fe.Field != "url" {
			t.Errorf("%s: %v, want an invalid url", u, err)
		}
		if !errors.Is(err, webhook.ErrBlockedAddress) && !errors.Is(err, webhook.ErrInvalidURL) {
			t.Errorf("%s: %v", u, err)
		}
	}
	// With the system resolver, localhost resolves to loopback and is refused.
	sys := newEnv(t, func(o *webhook.Options) { o.Dev = false })
	if _, _, err := sys.eng.Create(sys.ctx, sys.app, webhook.Params{URL: "http://localhost:8080/hook", EventTypes: []string{"*"}, Mode: platform.ModeLive}); !errors.Is(err, webhook.ErrBlockedAddress) {
		t.Errorf("localhost with the system resolver: %v", err)
	}
	for _, u := range []string{"ftp://hooks.example.com/", "https://user:pw@hooks.example.com/", "https://hooks.example.com/#frag",
		"hooks.example.com/path", "http:///path", "https://hooks.example.com:99999/", "https://nowhere.example.com/", "https://" + strings.Repeat("a", 2100)} {
		if err := create(u); !errors.Is(err, webhook.ErrInvalidURL) {
			t.Errorf("%s: %v, want ErrInvalidURL", u, err)
		}
	}
}

// The system resolver sends localhost to loopback, the registration resolver said it was
// public (DNS rebinding): the dialer still refuses, and no request reaches the receiver.
func TestConnectTimeCheckDefeatsRebinding(t *testing.T) {
	rc := newReceiver(t)
	u, _ := url.Parse(rc.URL)
	e := newEnv(t, func(o *webhook.Options) {
		o.Dev = false
		o.Resolver = fakeDNS{"localhost": {"93.184.216.34"}}
	})
	ep, _ := e.create(fmt.Sprintf("http://localhost:%s/hook", u.Port()), platform.ModeLive)
	e.publish(platform.ModeLive, e.event(event.SourceConnected, platform.ModeLive))
	if n := e.tick(); n != 1 {
		t.Fatalf("%d attempts", n)
	}
	if got := rc.got(); len(got) != 0 {
		t.Fatalf("the receiver on loopback got %d requests", len(got))
	}
	d := e.deliveries(ep.ID)[0]
	if d.Status != webhook.DeliveryFailed || !strings.Contains(d.LastError, "refused") || !strings.Contains(d.LastError, "loopback") {
		t.Errorf("delivery %s: %q", d.Status, d.LastError)
	}

	// A URL registered in dev mode is refused at connect time by a production engine.
	dev := newEnv(t)
	dev.store = e.store
	dev.app = e.app
	dev.opts.Dev = true
	dev.opts.Sealer = e.sealer
	dev.restart()
	ep2, _ := dev.create(rc.URL, platform.ModeLive)
	e.restart()
	e.publish(platform.ModeLive, e.event(event.SourceConnected, platform.ModeLive))
	e.tick()
	if got := rc.got(); len(got) != 0 {
		t.Fatalf("the receiver on loopback got %d requests", len(got))
	}
	if d := e.deliveries(ep2.ID)[0]; !strings.Contains(d.LastError, "127.0.0.1 is loopback") {
		t.Errorf("delivery %s: %q", d.Status, d.LastError)
	}
}

func TestDevModeAllowsOnlyLoopback(t *testing.T) {
	e := newEnv(t) // Dev: true
	rc := newReceiver(t)
	u, _ := url.Parse(rc.URL)
	ep, _ := e.create(fmt.Sprintf("http://localhost:%s/hook", u.Port()), platform.ModeTest)
	e.publish(platform.ModeTest, e.event(event.SourceConnected, platform.ModeTest))
	e.tick()
	if len(rc.got()) != 1 || e.deliveries(ep.ID)[0].Status != webhook.DeliverySucceeded {
		t.Fatal("dev mode did not deliver to localhost")
	}
	for _, bad := range []string{"http://10.0.0.1/", "http://169.254.169.254/", "http://[fd00:ec2::254]/"} {
		if _, _, err := e.eng.Create(e.ctx, e.app, webhook.Params{URL: bad, EventTypes: []string{"*"}, Mode: platform.ModeTest}); !errors.Is(err, webhook.ErrBlockedAddress) {
			t.Errorf("dev mode, %s: %v", bad, err)
		}
	}
}
