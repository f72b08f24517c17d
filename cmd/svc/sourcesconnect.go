package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/wire"
)

// newSourcesConnectCmd connects a source for the signed-in user: a local folder or a bucket at
// once (POST /v1/sources), or a provider account through the connect flow
// (POST /v1/provider-authorizations, then a browser, then the provider's callback).
func newSourcesConnectCmd(cf *clientFlags) *cobra.Command {
	var (
		open, insecure bool
		name, region   string
		poll, timeout  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "connect PROVIDER [PATH | s3://HOST[:PORT]/BUCKET[/PREFIX]]",
		Short: "Connect a folder, a bucket or a provider account for the signed-in user",
		Long: "Connects a source for the signed-in user (their session: --session, or a credentials file's session_cookie),\n" +
			"in live mode: test mode works on simulated sources only.\n\n" +
			"  svc sources connect vendor_d_local PATH     a folder on the server's machine, under one of its --local-root folders\n" +
			"  svc sources connect object_store_compatible s3://HOST[:PORT]/BUCKET[/PREFIX]\n" +
			"                                              a bucket; its keys come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY\n" +
			"  svc sources connect PROVIDER                an account at a provider that signs in through OAuth (vendor_a_mail, ...):\n" +
			"                                              prints the page to open in a browser (--open opens it), waits until the\n" +
			"                                              account is connected, and prints the new source",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cf.asUser = true // a credentials file's session, never its test key
			if err := cf.resolve(); err != nil {
				return err
			}
			if cf.session == "" {
				return errors.New("connecting a source needs the user's session: give --session, or --credentials with a session_cookie")
			}
			if !cf.flags.Changed("test-mode") {
				cf.testMode = false // the user's own accounts connect in live mode
			}
			c, err := cf.client()
			if err != nil {
				return err
			}
			n, ok := wire.ParseEnum(svcv1.Provider(0).Descriptor(), args[0])
			if !ok {
				return fmt.Errorf("%q is not a provider (vendor_a_mail, vendor_a_files, vendor_b_mail, vendor_b_files, vendor_c_files, vendor_d_local, object_store_compatible)", args[0])
			}
			provider := svcv1.Provider(n)
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			var req *svcv1.CreateSourceRequest
			switch provider {
			case svcv1.Provider_PROVIDER_VENDOR_D_LOCAL:
				if len(args) != 2 {
					return errors.New("vendor_d_local needs the folder: svc sources connect vendor_d_local PATH")
				}
				// The server opens the folder on its machine: an absolute path means the same there
				// (the server must run on this machine for a path of this machine to make sense).
				abs, err := filepath.Abs(args[1])
				if err != nil {
					return err
				}
				req = &svcv1.CreateSourceRequest{Provider: provider, Path: &abs}
			case svcv1.Provider_PROVIDER_OBJECT_STORE_COMPATIBLE:
				if len(args) != 2 {
					return errors.New("object_store_compatible needs the bucket: svc sources connect object_store_compatible s3://HOST[:PORT]/BUCKET[/PREFIX]")
				}
				if req, err = bucketRequest(args[1], insecure, region); err != nil {
					return err
				}
			default:
				if len(args) != 1 {
					return fmt.Errorf("%s connects through its sign-in page, not a path: svc sources connect %s", args[0], args[0])
				}
				return connectAccount(ctx, out, c.Sources, provider, open, poll, timeout, func(id string) error {
					return printSource(ctx, out, c.Sources, id)
				})
			}
			if name != "" {
				req.DisplayName = &name
			}
			res, err := c.Sources.CreateSource(ctx, connect.NewRequest(req))
			if err != nil {
				return explain(err)
			}
			return writeSource(out, res.Msg)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&open, "open", false, "open the sign-in page in a browser ($BROWSER, else xdg-open or open) when one is available")
	f.StringVar(&name, "name", "", "a name for people (default: the folder, or the bucket)")
	f.BoolVar(&insecure, "insecure", false, "reach the bucket over plain http (a server on loopback or a private network, with svc serve --dev)")
	f.StringVar(&region, "region", "", "the bucket's region (default us-east-1)")
	f.DurationVar(&poll, "poll", time.Second, "how often to ask whether the account is connected")
	f.DurationVar(&timeout, "timeout", 0, "how long to wait for the account (default: until the request expires, 30 minutes)")
	return cmd
}

// bucketRequest reads a bucket's URL and its keys from the environment. A URL's
// ?insecure=true (as --vault-cold takes it) is --insecure.
func bucketRequest(raw string, insecure bool, region string) (*svcv1.CreateSourceRequest, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" {
		return nil, fmt.Errorf("%q: want s3://HOST[:PORT]/BUCKET[/PREFIX]", raw)
	}
	if q := u.Query(); q.Has("insecure") {
		insecure = insecure || q.Get("insecure") == "true"
		q.Del("insecure")
		u.RawQuery = q.Encode()
	}
	ak, sk := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if ak == "" || sk == "" {
		return nil, errors.New("the bucket's keys come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; set both")
	}
	s := u.String()
	req := &svcv1.CreateSourceRequest{Provider: svcv1.Provider_PROVIDER_OBJECT_STORE_COMPATIBLE, Url: &s, AccessKeyId: &ak, SecretAccessKey: &sk}
	if insecure {
		req.Insecure = &insecure
	}
	if region != "" {
		req.Region = &region
	}
	return req, nil
}

// sourceReader reads sources and provider authorizations (the client's SourceService).
type sourceReader interface {
	GetSource(context.Context, *connect.Request[svcv1.GetSourceRequest]) (*connect.Response[svcv1.Source], error)
	CreateProviderAuthorization(context.Context, *connect.Request[svcv1.CreateProviderAuthorizationRequest]) (*connect.Response[svcv1.ProviderAuthorization], error)
	GetProviderAuthorization(context.Context, *connect.Request[svcv1.GetProviderAuthorizationRequest]) (*connect.Response[svcv1.ProviderAuthorization], error)
}

// connectAccount starts a provider authorization, shows (and with open, opens) its page, and
// waits until the account is connected, then calls done with the new source's id.
func connectAccount(ctx context.Context, out io.Writer, c sourceReader, provider svcv1.Provider, open bool, poll, timeout time.Duration, done func(string) error) error {
	res, err := c.CreateProviderAuthorization(ctx, connect.NewRequest(&svcv1.CreateProviderAuthorizationRequest{Provider: provider}))
	if err != nil {
		return explain(err)
	}
	az := res.Msg
	fmt.Fprintf(out, "Open this page in a browser signed in to svc as you, and continue to %s:\n\n  %s\n\n", enumName(provider), az.GetUrl())
	if open {
		if err := openBrowser(az.GetUrl()); err != nil {
			fmt.Fprintf(out, "(could not open a browser: %v; open the page yourself)\n", err)
		}
	}
	deadline := az.GetExpiresAt().AsTime()
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	fmt.Fprintf(out, "Waiting for %s (until %s; Ctrl-C stops waiting)...\n", enumName(provider), deadline.Local().Format("15:04"))
	lastErr := ""
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%s was not connected in time (request %s)", enumName(provider), az.GetId())
			}
			return ctx.Err()
		case <-t.C:
		}
		got, err := c.GetProviderAuthorization(ctx, connect.NewRequest(&svcv1.GetProviderAuthorizationRequest{Id: az.GetId()}))
		if err != nil {
			if ctx.Err() != nil {
				continue // the select above says why
			}
			return explain(err)
		}
		switch got.Msg.GetStatus() {
		case svcv1.ProviderAuthorizationStatus_PROVIDER_AUTHORIZATION_STATUS_CONNECTED:
			return done(got.Msg.GetSourceId())
		case svcv1.ProviderAuthorizationStatus_PROVIDER_AUTHORIZATION_STATUS_EXPIRED:
			return fmt.Errorf("the request expired before %s was connected; start again", enumName(provider))
		}
		if e := got.Msg.GetError(); e != "" && e != lastErr {
			lastErr = e
			fmt.Fprintf(out, "%s did not connect (%s); you can try again on the page.\n", enumName(provider), e)
		}
	}
}

// printSource prints a source by id.
func printSource(ctx context.Context, out io.Writer, c sourceReader, id string) error {
	res, err := c.GetSource(ctx, connect.NewRequest(&svcv1.GetSourceRequest{Id: id}))
	if err != nil {
		return explain(err)
	}
	return writeSource(out, res.Msg)
}

// writeSource prints a connected source as svc sources list does, after a heading.
func writeSource(out io.Writer, s *svcv1.Source) error {
	_, err := fmt.Fprintf(out, "connected %s  %s  %s  %s  %s\n", s.GetId(), enumName(s.GetProvider()), s.GetKind(), enumName(s.GetStatus()), s.GetDisplayName())
	return err
}

// openBrowser opens target with $BROWSER, else the desktop's opener, when there is one.
func openBrowser(target string) error {
	if b := os.Getenv("BROWSER"); b != "" {
		// $BROWSER may list several commands separated by colons; the first that runs wins.
		var err error
		for _, name := range strings.Split(b, ":") {
			if err = startDetached(exec.Command(name, target)); err == nil {
				return nil
			}
		}
		return err
	}
	opener := "xdg-open"
	if runtime.GOOS == "darwin" {
		opener = "open"
	}
	if _, err := exec.LookPath(opener); err != nil {
		return fmt.Errorf("no browser: set BROWSER, or install %s", opener)
	}
	return startDetached(exec.Command(opener, target))
}

// startDetached starts cmd and reaps it when it ends (a browser may outlive the command).
func startDetached(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}
