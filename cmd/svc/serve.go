package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"svc.dev/svc"
	"svc.dev/svc/execute"
	"svc.dev/svc/plan/spamc"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/billing"
	"svc.dev/svc/platform/billing/stripe"
	"svc.dev/svc/platform/export"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/builtin"
	"svc.dev/svc/providers/vendorhttp"
	"svc.dev/svc/server"
	"svc.dev/svc/server/devseed"
	"svc.dev/svc/storage"
	"svc.dev/svc/storage/postgres"
	"svc.dev/svc/vault/search"
)

func newServeCmd() *cobra.Command {
	var (
		addr, dataDir string
		pluginDir     string
		inProcess     bool
		devSources    []string
		localRoots    []string
		dev           bool
		rateLimit     int
		rateWindow    time.Duration
		baseURL       string
		oauthConfig   string
		scrubEvery    time.Duration
		verifyEvery   time.Duration
		verifyBudget  int64
		deletionGrace time.Duration
		exportDaily   int64
		maxConns      int
		creatorEvery  time.Duration
		intelEvery    time.Duration
		coldAfter     time.Duration
		vaultStore    vaultFlags
		debugAddr     string
		reqTimeout    time.Duration
		drain         time.Duration
		stripeURL     string
		database      string
		leaseTTL      time.Duration
		memoryLimit   = byteSize(defaultServeMemoryLimit)
		driveObjects  int
		spamdAddr     string
		rspamdURL     string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the API (REST and Connect) on bbolt from a data directory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tuneGC(int64(memoryLimit))
			if dataDir == "" {
				dataDir = defaultDataDir()
			}
			return serve(cmd.Context(), serveOptions{addr: addr, dataDir: dataDir, dev: dev, pluginDir: pluginDir, inProcess: inProcess, devSources: devSources, localRoots: localRoots,
				rate: platform.RateLimit{Limit: rateLimit, Window: rateWindow}, baseURL: baseURL, oauthConfig: oauthConfig, scrubEvery: scrubEvery, verifyEvery: verifyEvery, verifyBudget: verifyBudget, intelEvery: intelEvery, coldAfter: coldAfter, vault: vaultStore, log: cmd.ErrOrStderr(),
				debugAddr: debugAddr, requestTimeout: reqTimeout, drain: drain, deletionGrace: deletionGrace, exportDaily: exportDaily, maxConns: maxConns, creatorEvery: creatorEvery,
				stripeKey: os.Getenv("SVC_STRIPE_SECRET_KEY"), stripeURL: stripeURL, database: database, driveObjects: driveObjects,
				spamd: spamdAddr, rspamd: rspamdURL, leaseTTL: leaseTTL})
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on")
	f.StringVar(&dataDir, "data", "", "data directory (default $XDG_DATA_HOME/svc or ~/.local/share/svc)")
	f.BoolVar(&dev, "dev", false, "seed a test tenant and write dev-credentials.json into the data directory")
	f.IntVar(&rateLimit, "rate-limit", platform.DefaultRateLimit.Limit, "requests allowed per principal per window")
	f.DurationVar(&rateWindow, "rate-window", platform.DefaultRateLimit.Window, "rate limit window")
	f.StringVar(&pluginDir, "plugin-dir", builtin.DefaultPluginDir(), "directory of third-party provider plugins (svc-provider-NAME)")
	f.BoolVar(&inProcess, "in-process-providers", false, "run the built-in providers in this process instead of as plugins")
	f.StringVar(&baseURL, "base-url", "", "the externally visible origin, as clients and OAuth callbacks reach it (default: the listen address over http)")
	f.StringVar(&oauthConfig, "oauth-config", "", "JSON file of the providers end users connect through OAuth 2 (docs/connect.md)")
	f.DurationVar(&verifyEvery, "verify-every", 30*24*time.Hour, "re-read every vault object from its disk and verify it at least this often (hourly runs within --verify-bytes-per-hour); 0 never")
	f.DurationVar(&intelEvery, "intel-scan-every", time.Hour, "how often to scan every tenant's connected mail for billing traps and trials (the first scan a minute after start); 0 never")
	f.Int64Var(&verifyBudget, "verify-bytes-per-hour", 0, "the reading budget of scheduled verification, in bytes per hour (0: no limit)")
	f.DurationVar(&scrubEvery, "scrub-every", server.DefaultScrubInterval, "how often to scrub every tenant's vault (re-read and re-hash every copy); 0 never")
	f.DurationVar(&coldAfter, "cold-after", server.DefaultColdAfter, "move vault objects to the cold tier this long after their commit (checked after each scrub); 0 never")
	f.StringVar(&debugAddr, "debug-addr", "", "serve net/http/pprof on this loopback address (e.g. 127.0.0.1:6060); off when empty")
	f.DurationVar(&reqTimeout, "request-timeout", server.DefaultRequestTimeout, "how long a request may take to start its response before it is answered 503 with Retry-After")
	f.DurationVar(&drain, "drain", 30*time.Second, "on SIGTERM, how long in-flight requests may take before the process stops anyway")
	f.DurationVar(&deletionGrace, "deletion-grace", server.DefaultDeletionGrace, "how long a deleted account can still be kept by cancelling its deletion job before it is erased")
	f.Int64Var(&exportDaily, "export-daily-bytes", export.DefaultDailyBytes, "bytes of export archives an account may have written in any 24 hours before another export is refused (409 limit_reached); negative: no bound")
	f.DurationVar(&creatorEvery, "creator-reconcile-every", server.DefaultCreatorReconcileEvery, "how often to reconcile every tenant's connected creator revenue sources (the first run a minute after start); 0 never")
	f.IntVar(&maxConns, "max-connections", server.DefaultMaxConns, "connections held open at once: at the bound the longest idle is closed, and a new one is refused (503) only when all are busy")
	vaultStore.register(f)
	f.Var(&memoryLimit, "memory-limit", "soft limit of the server's memory (Go heap and runtime; e.g. 512MiB): the garbage collector works harder near it; GOMEMLIMIT wins when set; 0 none")
	f.StringVar(&stripeURL, "stripe-api-url", "", "Stripe API base URL (default Stripe's; stripe-mock's for a local trial); billing goes through Stripe when SVC_STRIPE_SECRET_KEY is set")
	f.StringVar(&database, "database", "", "keep records in this PostgreSQL database (postgres://user@host:port/db) instead of bbolt in the data directory, which still holds the vault, keys and search index (docs/scale-out.md)")
	f.DurationVar(&leaseTTL, "lease", execute.DefaultClaimTTL, "with --database: how long a replica's leases on its work (executions, jobs, webhook deliveries, background loops) last unrenewed, renewed every third of it; a dead replica's work is taken over about this long after it died")
	f.IntVar(&driveObjects, "dev-drive-objects", devseed.DefaultDriveObjects, "with --dev, how many files the simulated drive holds (6 are 56 MiB once vaulted, 1000 are 8.6 GiB, for load work); read when the tenant is first seeded")
	f.StringVar(&spamdAddr, "spamd", "", "ask SpamAssassin's spamd at HOST:PORT (the spamc protocol) about every message a plan lists; its verdict and score join the removal reason (about 6 messages/s: a second opinion for a few thousand messages)")
	f.StringVar(&rspamdURL, "rspamd", "", "ask rspamd's normal worker at this URL (e.g. http://127.0.0.1:11333) about every message a plan lists, as --spamd")
	f.StringArrayVar(&localRoots, "local-root", nil, "a folder under which signed-in users may connect local folders as sources (repeatable; svc sources connect vendor_d_local PATH); every user of the server may connect anything under it")
	f.StringArrayVar(&devSources, "dev-source", nil, "with --dev, also connect PROVIDER:REF[?key=value...] (e.g. vendor_d_local:/path/to/folder) in the test tenant")
	return cmd
}

// orNever maps a duration flag whose 0 means never to server.Config, where 0 is the default
// and negative never.
func orNever(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

func defaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "svc")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "svc")
	}
	return "svc-data"
}

type serveOptions struct {
	addr, dataDir string
	spamd         string // spamd's HOST:PORT (--spamd)
	rspamd        string // rspamd's URL (--rspamd)
	pluginDir     string
	dev           bool
	inProcess     bool
	devSources    []string
	localRoots    []string
	rate          platform.RateLimit
	baseURL       string
	oauthConfig   string
	scrubEvery    time.Duration
	// deletionGrace is how long a deleted account is kept; exportDaily bounds its exports.
	deletionGrace time.Duration
	exportDaily   int64
	maxConns      int
	creatorEvery  time.Duration
	// verifyEvery and verifyBudget configure scheduled verification (0: never).
	verifyEvery  time.Duration
	verifyBudget int64
	// intelEvery is how often mail is scanned for meters and trials (0: never).
	intelEvery time.Duration
	coldAfter  time.Duration
	vault      vaultFlags
	log        interface{ Write([]byte) (int, error) }
	debugAddr  string
	// requestTimeout is the per-request deadline (0: the server's default).
	requestTimeout time.Duration
	// drain bounds the graceful shutdown (0: 30 s); closing the store gets closeGrace more.
	drain time.Duration
	// stripeKey (from the environment, never a flag) turns billing through Stripe on.
	stripeKey, stripeURL string
	// database is the PostgreSQL store's DSN; "" keeps bbolt in the data directory.
	database string
	// leaseTTL is, with database, how long a replica's leases last unrenewed (0: the default).
	leaseTTL time.Duration
	// driveObjects is the size of the dev tenant's simulated drive (0: devseed's default).
	driveObjects int
}

// closeGrace is how long closing the server may take after the drain before the process
// stops without it: a store wedged by a stuck request must not keep a SIGTERMed process alive.
// bbolt needs no clean close to be consistent on disk.
const closeGrace = 5 * time.Second

// serve runs the API until ctx is cancelled (SIGINT, SIGTERM), then drains requests and
// closes the store.
func serve(ctx context.Context, o serveOptions) error {
	logger := slog.New(slog.NewTextHandler(o.log, nil))
	// The binary serves its own built-in providers out of process, so a provider crash or hang
	// cannot take the API down.
	var oauth map[providers.Name]server.OAuthProvider
	// devDefaults are the local fakes' endpoints and pacing, per vendor in the keys its
	// connector takes, for the accounts a --dev server connects at them through OAuth
	// (devOAuth).
	var devDefaults map[providers.Name]providers.Config
	opts := builtin.Options{PluginDir: o.pluginDir, Vendors: true,
		// Read at each Open, after oauth is loaded below: a connector refreshes a source's
		// token with svc's client at the provider.
		Defaults: func(name providers.Name) providers.Config {
			p, ok := oauth[name]
			if !ok {
				return nil
			}
			cfg := providers.Config{vendorhttp.KeyClientID: p.ClientID, vendorhttp.KeyClientSecret: p.ClientSecret, vendorhttp.KeyTokenURL: p.TokenURL}
			for k, v := range devDefaults[name] {
				cfg[k] = v
			}
			return cfg
		}}
	if !o.inProcess {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		opts.Executable = exe
	}
	reg, err := builtin.Registry(opts)
	if err != nil {
		return fmt.Errorf("providers: %w", err)
	}
	defer reg.Close()
	if o.oauthConfig != "" {
		if oauth, err = loadOAuthConfig(o.oauthConfig, reg.Names(), os.Getenv); err != nil {
			return err
		}
	}
	var vendors []devseed.Vendor
	if o.dev {
		var stopVendors func()
		var authURLs map[providers.Name]string
		vendors, authURLs, stopVendors = startDevVendors()
		defer stopVendors()
		oauth, devDefaults = devOAuth(oauth, vendors, authURLs)
	}
	localRoots := make([]string, 0, len(o.localRoots))
	for _, r := range o.localRoots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return fmt.Errorf("--local-root %q: %w", r, err)
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return fmt.Errorf("--local-root %q: not a folder", r)
		}
		localRoots = append(localRoots, abs)
	}
	if o.baseURL != "" {
		if u, err := url.Parse(o.baseURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return fmt.Errorf("--base-url %q: want an origin such as https://svc.example.com", o.baseURL)
		}
	}
	vb, err := o.vault.backends(ctx)
	if err != nil {
		return err
	}
	var processor billing.Processor
	if o.stripeKey != "" {
		processor = stripe.New(o.stripeKey, &stripe.Options{URL: o.stripeURL})
	}
	// Listen first: without --base-url the links svc signs (export downloads, the portal, OAuth
	// callbacks) name the listen address, never a request's Host header.
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	baseURL := cmp.Or(strings.TrimRight(o.baseURL, "/"), "http://"+ln.Addr().String())
	junk, err := junkFilter(o.spamd, o.rspamd)
	if err != nil {
		ln.Close()
		return err
	}
	var store storage.Hosted                                       // nil: bbolt in the data directory
	var searchIndex func(*search.Options) (svc.SearchIndex, error) // nil: bleve in the data directory
	var replica *svc.Replica                                       // nil: the only process (bbolt)
	if o.database != "" {
		// Any number of processes may serve one database: each is a replica.
		replica = &svc.Replica{LeaseTTL: o.leaseTTL, RenewEvery: o.leaseTTL / 3}
		pg, err := postgres.Open(ctx, o.database)
		if err != nil {
			ln.Close()
			return fmt.Errorf("--database: %w", err)
		}
		store = pg
		// Vault search in the database too, so that every replica on it searches one index
		// (docs/search.md, "Search in a cluster").
		searchIndex = func(opts *search.Options) (svc.SearchIndex, error) { return pg.SearchIndex(opts), nil }
	}
	srv, err := server.New(server.Config{Store: store, SearchIndex: searchIndex, Billing: processor, Vault: vb, DataDir: o.dataDir, BaseURL: baseURL, RateLimit: o.rate, Logger: logger, Providers: reg, Dev: o.dev, OAuth: oauth, LocalRoots: localRoots, ScrubInterval: orNever(o.scrubEvery), VerifyEvery: orNever(o.verifyEvery), VerifyBytesPerHour: o.verifyBudget, IntelScanEvery: orNever(o.intelEvery), ColdAfter: orNever(o.coldAfter), DeletionGrace: o.deletionGrace, CreatorReconcileEvery: orNever(o.creatorEvery), ExportDailyBytes: o.exportDaily,
		RequestTimeout: o.requestTimeout, JunkFilter: junk, Replica: replica})
	if err != nil {
		ln.Close()
		return err
	}
	if o.debugAddr != "" {
		stopDebug, err := serveDebug(o.debugAddr, logger)
		if err != nil {
			ln.Close()
			srv.Close()
			return err
		}
		defer stopDebug()
	}
	if o.dev {
		var extra []server.SourceSpec
		for _, ds := range o.devSources {
			name, ref, ok := strings.Cut(ds, ":")
			if !ok {
				return fmt.Errorf("--dev-source %q: want PROVIDER:REF", ds)
			}
			ref, query, _ := strings.Cut(ref, "?") // PROVIDER:REF?key=value&... sets provider config
			cfg := providers.Config{}
			if query != "" {
				q, err := url.ParseQuery(query)
				if err != nil {
					return fmt.Errorf("--dev-source %q: %w", ds, err)
				}
				for k := range q {
					cfg[k] = q.Get(k)
				}
			}
			kind := "folder"
			if strings.HasSuffix(name, "_mail") {
				kind = "mail"
			}
			spec := server.SourceSpec{Provider: providers.Name(name), SourceRef: ref, Kind: kind, DisplayName: ref, Config: cfg}
			if spec.Provider == providers.VendorDLocal { // the folder is the provider's root
				cfg["root"] = ref
				spec.SourceRef = ""
			}
			extra = append(extra, spec)
		}
		creds, err := srv.Seed(ctx, baseURL, &devseed.Options{Sources: extra, Vendors: vendors, DriveObjects: o.driveObjects})
		if err != nil {
			ln.Close()
			// A SIGTERM during the seed: the seed's executions or jobs may wait on a plugin
			// that stopped answering, as at any shutdown.
			if cerr := closeServer(srv, reg, logger); cerr != nil {
				logger.Error("close", "err", cerr)
			}
			return fmt.Errorf("seed: %w", err)
		}
		logger.Info("dev tenant ready", "credentials", filepath.Join(o.dataDir, devseed.CredentialsFile), "user_id", creds.UserID)
	}
	// Idle keep-alive connections are closed after a minute, so idle clients cannot hold the
	// server's descriptors (issue 21). No write timeout: downloads and exports stream for as
	// long as they take; the per-request deadline bounds how long one may take to start.
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(server.LimitConnections(hs, ln, o.maxConns)) }()
	logger.Info("svc listening", "base_url", baseURL, "data", o.dataDir)

	select {
	case err = <-errc:
	case <-ctx.Done():
		logger.Info("shutting down: draining requests")
		sctx, cancel := context.WithTimeout(context.Background(), cmp.Or(o.drain, 30*time.Second))
		err = hs.Shutdown(sctx)
		cancel()
		if err != nil {
			logger.Warn("drain deadline passed: closing the connections still open", "err", err)
			hs.Close()
		}
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	if cerr := closeServer(srv, reg, logger); err == nil {
		err = cerr
	}
	logger.Info("stopped")
	return err
}

// closeServer closes the server within closeGrace: when it still waits on provider calls
// after half of it (a frozen plugin, say), the plugins are stopped without waiting on them,
// so those calls fail at once (the steps resume from the journal); when it still waits after
// the rest (a stuck request's transaction holds the store), the process stops without it.
// Every committed transaction is on disk; executions resume from their journals.
func closeServer(srv *server.Server, reg *providers.Registry, logger *slog.Logger) error {
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	select {
	case err := <-closed:
		return err
	case <-time.After(closeGrace / 2):
	}
	logger.Warn("executions still wait on providers: stopping the provider plugins")
	go reg.Close()
	select {
	case err := <-closed:
		return err
	case <-time.After(closeGrace / 2):
	}
	logger.Error("the store did not close in time; stopping without it", "after", closeGrace)
	return errors.New("stopped without closing the store (see the log)")
}

// serveDebug serves net/http/pprof on a loopback address, for finding a stuck request
// (docs/operations.md); it refuses any other address, since profiles reveal memory.
func serveDebug(addr string, logger *slog.Logger) (stop func(), err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--debug-addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("--debug-addr %q: only a loopback address may serve the debug endpoints", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--debug-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	logger.Info("debug endpoints listening", "addr", "http://"+ln.Addr().String()+"/debug/pprof/")
	return func() { hs.Close() }, nil
}

// junkFilter is the spam filter --spamd or --rspamd names (nil: none, the embedded rules alone).
func junkFilter(spamdAddr, rspamdURL string) (spamc.Checker, error) {
	switch {
	case spamdAddr != "" && rspamdURL != "":
		return nil, fmt.Errorf("--spamd and --rspamd: choose one filter")
	case spamdAddr != "":
		if _, _, err := net.SplitHostPort(spamdAddr); err != nil {
			return nil, fmt.Errorf("--spamd %q: want HOST:PORT: %w", spamdAddr, err)
		}
		return &spamc.Client{Addr: spamdAddr}, nil
	case rspamdURL != "":
		if u, err := url.Parse(rspamdURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("--rspamd %q: want a URL such as http://127.0.0.1:11333", rspamdURL)
		}
		return &spamc.Rspamd{URL: rspamdURL}, nil
	}
	return nil, nil
}
