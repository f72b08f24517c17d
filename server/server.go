// Package server is svc's API edge: one implementation of every svc.v1 method served over
// Connect (and gRPC, gRPC-Web) and over the spec's REST paths, with authentication, tenancy,
// validation, idempotency, rate limits, pagination and RFC 9457 problem details shared by both.
// It is the only package that turns domain errors into wire errors.
package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/proto"

	"svc.dev/svc"
	"svc.dev/svc/creator"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/plan/spamc"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/billing"
	"svc.dev/svc/platform/export"
	"svc.dev/svc/platform/job"
	"svc.dev/svc/platform/webhook"
	"svc.dev/svc/providers"
	"svc.dev/svc/receipt"
	"svc.dev/svc/server/internal/connectflow"
	"svc.dev/svc/server/internal/platformapi"
	"svc.dev/svc/server/internal/rpc"
	"svc.dev/svc/storage"
	"svc.dev/svc/vault"
	"svc.dev/svc/vault/backend"
	"svc.dev/svc/vault/search"
)

// Config configures a Server. Zero fields take defaults.
type Config struct {
	// DataDir holds the store, the master key and, with Dev, dev-credentials.json.
	DataDir string
	// BaseURL is the externally visible address (for dev-credentials.json and links).
	BaseURL string
	// RateLimit is the per-principal allowance (default platform.DefaultRateLimit).
	RateLimit platform.RateLimit
	// MaxBodyBytes bounds request bodies (default 1 MiB).
	MaxBodyBytes int64
	// Password sets the argon2id cost (default platform.DefaultPasswordParams).
	Password platform.PasswordParams
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives operational logs; secrets are never logged (default slog.Default()).
	Logger *slog.Logger
	// Providers opens sources (default: the built-ins, in process). The caller closes it.
	Providers *providers.Registry
	// Dev relaxes what only a local developer setup needs: webhook receivers on loopback.
	Dev bool
	// OAuth configures providers whose sources connect through OAuth 2 (the connect flow).
	OAuth map[providers.Name]OAuthProvider
	// LocalRoots are the folders under which signed-in users may connect local folders
	// (POST /v1/sources with vendor_d_local); none: no local folder connects through the API.
	LocalRoots []string
	// ScrubInterval is how often every tenant's vault is scrubbed (re-read, re-hashed, marked
	// corrupt or repaired) as a job; 0 means DefaultScrubInterval, negative never.
	ScrubInterval time.Duration
	// IntelScanEvery is how often every tenant's connected mail is scanned by the intel
	// detectors (a scan job per tenant, from each source's delta marker; the first a minute
	// after start); 0 means an hour, negative never.
	IntelScanEvery time.Duration
	// CreatorReconcileEvery is how often every tenant's creator revenue sources are
	// reconciled as a reconcile job; 0 means DefaultCreatorReconcileEvery, negative never.
	CreatorReconcileEvery time.Duration
	// VerifyEvery is how often every vault object must be re-read from its storage medium and
	// verified (scheduled verification, run hourly within VerifyBytesPerHour); 0 means 30 days,
	// negative never.
	VerifyEvery time.Duration
	// VerifyBytesPerHour is the reading budget of scheduled verification (0: no limit).
	VerifyBytesPerHour int64
	// ColdAfter is how long after its commit a vault object moves to the cold tier, checked
	// after each scrub; 0 means DefaultColdAfter, negative never.
	ColdAfter time.Duration
	// Vault chooses the vault's storage backends (default: local disk in the data directory).
	Vault VaultBackends
	// RequestTimeout is how long a request may take to start its response before the client
	// gets 503 with Retry-After (default DefaultRequestTimeout).
	RequestTimeout time.Duration
	// Store keeps every record; nil opens the default store of DataDir (svc.OpenStore). The
	// server closes it.
	Store storage.Hosted
	// SearchIndex opens the vault's search index (svc.Options.SearchIndex); nil: the bleve
	// index in DataDir. `svc serve --database` gives PostgreSQL's, which replicas share.
	SearchIndex func(*search.Options) (svc.SearchIndex, error)
	// StoreOptions tunes the default store (tests: a small initial map).
	StoreOptions *svc.BoltOptions
	// MasterKeyFile is where the master key is kept when not in DataDir (svc.LoadMasterKey).
	MasterKeyFile string
	// OutboundTLS configures TLS for the requests svc makes to third parties' servers (one-click
	// unsubscribes); nil: the system's roots.
	OutboundTLS *tls.Config
	// BodyReadTimeout bounds how long a client may take to send a request body, so a client
	// trickling one byte at a time cannot hold a connection (default DefaultBodyReadTimeout).
	BodyReadTimeout time.Duration
	// Billing is the payment processor (billing/stripe); nil serves svc's own portal page and
	// creates no invoice items.
	Billing billing.Processor
	// Creator is what creator revenue's connectors need (an HTTP client; the platforms' API
	// bases, for tests against local fakes).
	Creator creator.Deps
	// JunkFilter, when set, is the spam filter plans ask about each listed message (svc
	// serve --spamd or --rspamd; svc.Options.JunkFilter).
	JunkFilter spamc.Checker
	// DeletionGrace is how long a deleted account can still be kept by cancelling its deletion
	// job (default DefaultDeletionGrace).
	DeletionGrace time.Duration
	// Replica, when set, makes the server one of several replicas on one store (which must
	// hand out leases: PostgreSQL's): executions, jobs, webhook deliveries and the background
	// loops are each taken by one replica at a time (docs/scale-out.md). Nil: the only
	// process, as with bbolt.
	Replica *svc.Replica
	// ExportDailyBytes bounds the bytes of export archives an account may have written in any
	// 24 hours (0: export.DefaultDailyBytes; negative: no bound).
	ExportDailyBytes int64
}

// DefaultBodyReadTimeout is the default Config.BodyReadTimeout.
const DefaultBodyReadTimeout = 30 * time.Second

// VaultBackends are the vault's two tiers; nil ones are local disk under DataDir/vault. The
// caller owns them.
type VaultBackends struct {
	Hot, Cold backend.Backend
}

// Server is the API. Make it with New, serve Handler, and Close it when done.
type Server struct {
	cfg       Config
	log       *slog.Logger
	store     storage.Hosted
	accounts  *platform.Accounts
	devs      *platform.Developers
	idem      *platform.Idempotency
	limiter   *platform.Limiter
	pager     rpc.Pager
	validator protovalidate.Validator
	csrf      *http.CrossOriginProtection
	methods   map[string]*method // by procedure
	handler   http.Handler
	openapi   []byte
	providers *providers.Registry
	sealer    *platform.Sealer
	// flow is the connect flow (connect sessions, consent pages, provider OAuth, a user's own sources).
	flow *connectflow.Flow

	// core is the embedding package: sources, plans, executions, receipts, manifests and the
	// vault live there; the handlers check the caller and call it.
	core *svc.Instance

	plans        storage.Plans
	planHeaders  storage.Records[*svcv1.Plan]
	jobs         storage.Records[*svcv1.Job]
	sources      storage.Records[*svcv1.Source]
	destinations storage.Records[*svcv1.Destination]
	executions   storage.Records[*svcv1.Execution]
	auditLog     storage.Records[*svcv1.AuditEntry]
	audit        *storage.Batcher[*svcv1.AuditEntry]
	auditor      rpc.Audit
	eventLog     storage.Records[*svcv1.Event]
	meter        *platform.Meter

	webhooks  *webhook.Engine
	stopHooks context.CancelFunc
	keyring   *receipt.Keyring
	vault     *vault.Vault
	manifests storage.Records[*svcv1.Manifest]

	background sync.WaitGroup // work that Close waits for (the scrub loop)
	// ready runs the readiness probes of the store (GET /readyz).
	ready readiness

	jobRunner *job.Runner // runs jobs (export, deletion, ...)
	exportKey []byte      // authenticates export download URLs and portal pages
	// exports writes and keeps account export archives.
	exports *export.Exports
	// platformAPI serves accounts, organizations, applications, keys, webhooks, usage and
	// the billing portal.
	platformAPI *platformapi.API
	biller      *billing.Biller
	exportMu    sync.Mutex     // one account export at a time per tenant
	replica     *replicaLeases // nil: the only process on the store
}

// New opens (creating if needed) the data directory and returns a ready server.
func New(cfg Config) (*Server, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("server: no data directory")
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.BodyReadTimeout == 0 {
		cfg.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	// The master key first: a new key is made only for a directory that holds no store yet.
	master, err := svc.LoadMasterKey(cfg.DataDir, cfg.MasterKeyFile)
	if err != nil {
		return nil, err
	}
	store := cfg.Store
	if store == nil {
		if store, err = svc.OpenStore(cfg.DataDir, cfg.StoreOptions); err != nil {
			return nil, err
		}
	}
	s := &Server{}
	core, err := svc.Open(context.Background(), cfg.DataDir, &svc.Options{
		Store: store, MasterKey: master, Providers: cfg.Providers, Now: cfg.Now, Logger: cfg.Logger,
		VaultHot: cfg.Vault.Hot, VaultCold: cfg.Vault.Cold,
		Announcer: announcer{s}, Charger: charger{s},
		Unsubscribe: newUnsubscriber(cfg.Dev, cfg.OutboundTLS).send,
		DeferResume: true, // after the webhooks and handlers are ready (below)
		Creator:     cfg.Creator,
		SearchIndex: cfg.SearchIndex,
		JunkFilter:  cfg.JunkFilter,
		Replica:     cfg.Replica,
	})
	if err != nil {
		store.Close()
		return nil, err
	}
	// fail undoes what New opened so far.
	fail := func(err error) (*Server, error) {
		core.Close()
		store.Close()
		return nil, err
	}
	v, err := protovalidate.New()
	if err != nil {
		return fail(fmt.Errorf("validator: %w", err))
	}
	res := store.Resources()
	*s = Server{
		cfg:      cfg,
		core:     core,
		log:      cfg.Logger,
		store:    store,
		accounts: platform.NewAccounts(store, &platform.AccountsOptions{Password: cfg.Password, Now: cfg.Now}),
		devs:     platform.NewDevelopers(store, cfg.Now),
		// A key left claimed by a replica that died is claimed again well after any request
		// of a live one would have ended (its deadline).
		idem:         platform.NewIdempotency(store, cfg.Now).AbandonAfter(max(platform.DefaultIdempotencyInFlight, 4*cfg.RequestTimeout)),
		limiter:      platform.NewLimiter(cfg.RateLimit, cfg.Now),
		pager:        rpc.Pager{Cursors: platform.NewCursors(core.DeriveKey("cursor"))},
		validator:    v,
		csrf:         http.NewCrossOriginProtection(),
		methods:      map[string]*method{},
		plans:        store.Plans(),
		planHeaders:  res.PlanHeaders(),
		jobs:         res.Jobs(),
		sources:      res.Sources(),
		destinations: res.Destinations(),
		executions:   res.Executions(),
		auditLog:     res.Audit(),
		eventLog:     res.EventLog(),
		providers:    core.Providers(),
		keyring:      core.ReceiptKeys(),
		vault:        core.Vault(),
		manifests:    res.Manifests(),
		sealer:       core.Sealer(),
		exportKey:    core.DeriveKey("export-url"),
		replica:      newReplicaLeases(core),
	}
	s.exports = &export.Exports{Dir: filepath.Join(cfg.DataDir, exportsDir), Store: store, Vault: core.Vault(),
		Key: core.DeriveKey("export-archive"), Connection: func(c *platform.Connection) proto.Message { return connectflow.ConnectionProto(c) }, Now: cfg.Now,
		DailyBytes: cfg.ExportDailyBytes}
	if cfg.Billing != nil {
		s.biller = billing.New(cfg.Billing, store.Billing())
	}
	jo := &job.Options{Now: cfg.Now, Logger: cfg.Logger}
	if s.replica != nil {
		jo.Leases, jo.RenewEvery = s.replica, s.replica.r.RenewEvery
	}
	s.jobRunner = job.NewRunner(svc.JobStore{Records: s.jobs}, jobEvents{s}, jo)
	logErr := func(what string) func(error) {
		return func(err error) { s.log.Error("write "+what, "err", err) }
	}
	s.audit = storage.NewBatcher(s.auditLog, logErr("audit log"))
	s.auditor = rpc.Audit{Sink: s.audit, Now: cfg.Now}
	if s.meter, err = platform.OpenMeter(filepath.Join(cfg.DataDir, usageLogFile), store.Usage(), s.devs, platform.MeterOptions{
		Now: cfg.Now, Logger: cfg.Logger, RotateAt: usageLogRotate,
		OnCeiling: func(ctx context.Context, orgID, typ string, data map[string]any) {
			s.emit(ctx, platform.Tenant{Owner: orgID, Mode: platform.ModeLive}, typ, "/v1/usage", orgID, data)
		}}); err != nil {
		return fail(err)
	}
	// Requests in flight when the process last stopped will never finish: free their keys. A
	// replica frees only expired ones: the others' requests in flight are not its own.
	if _, err := s.idem.Purge(context.Background(), s.replica == nil); err != nil {
		return fail(fmt.Errorf("purge idempotency keys: %w", err))
	}
	hooksCtx, stopHooks := context.WithCancel(context.Background())
	if s.webhooks, err = s.newWebhooks(hooksCtx); err != nil {
		stopHooks()
		return fail(err)
	}
	s.stopHooks = stopHooks
	go s.webhooks.Run(hooksCtx)
	if err := s.interruptJobs(context.Background()); err != nil {
		stopHooks()
		return fail(fmt.Errorf("interrupted jobs: %w", err))
	}
	if s.replica != nil {
		// Jobs whose replica died are found (their leases expired) and ended as interrupted.
		s.background.Go(func() { s.orphanLoop(hooksCtx) })
	}
	s.background.Go(func() { s.deletionLoop(s.loopContext(hooksCtx, "deletion")) })
	if every := cmp.Or(cfg.ScrubInterval, DefaultScrubInterval); every > 0 {
		s.background.Go(func() { s.scrubLoop(s.loopContext(hooksCtx, "scrub"), every) })
	}
	if cfg.VerifyEvery >= 0 {
		s.background.Go(func() { s.verifyLoop(s.loopContext(hooksCtx, "verify")) })
	}
	if cfg.IntelScanEvery >= 0 {
		s.background.Go(func() { s.intelLoop(s.loopContext(hooksCtx, "intel"), cmp.Or(cfg.IntelScanEvery, time.Hour)) })
	}
	if cfg.CreatorReconcileEvery >= 0 {
		s.background.Go(func() {
			s.creatorLoop(s.loopContext(hooksCtx, "creator"), cmp.Or(cfg.CreatorReconcileEvery, DefaultCreatorReconcileEvery))
		})
	}
	s.background.Go(func() { s.remindLoop(s.loopContext(hooksCtx, "remind")) })
	// Tenants with vault content and no search index (a data directory from before search)
	// get one built by an index job.
	s.background.Go(func() { s.indexMissing(hooksCtx) })
	if err := s.loadMethods(); err != nil {
		return fail(err)
	}
	s.platformAPI = s.newPlatformAPI()
	s.flow = s.newConnectFlow()
	s.register()
	if s.openapi, err = s.openAPIDocument(); err != nil {
		return fail(err)
	}
	s.handler = s.routes()
	// Executions that were running when the process stopped continue from their journals.
	if err := s.core.Resume(context.Background()); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Handler returns the HTTP handler serving the whole API.
func (s *Server) Handler() http.Handler { return s.handler }

// Close closes the open providers and the store. Call it after the HTTP server has drained.
func (s *Server) Close() error {
	s.core.Shutdown()
	s.jobRunner.Close()
	s.stopHooks()
	s.background.Wait() // the scrub loop stops between objects
	s.core.Close()      // the search index, the vault, the sources it opened, the built-in providers it made
	s.meter.Close()
	s.audit.Close()
	return s.store.Close()
}

// Store returns the server's store, for tools and tests that load data directly.
func (s *Server) Store() storage.Hosted { return s.store }

// Accounts returns the account service, for tools and tests.
func (s *Server) Accounts() *platform.Accounts { return s.accounts }

// Developers returns the developer platform service, for tools and tests.
func (s *Server) Developers() *platform.Developers { return s.devs }

// every runs fn after first, then every interval, until ctx ends (the background loops: scrub,
// scheduled verification, deletions, intel scans, trial reminders). fn runs on this goroutine:
// a slow run delays the next, never overlaps it.
func every(ctx context.Context, first, interval time.Duration, fn func()) {
	wait := first
	for {
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		} else if ctx.Err() != nil {
			return
		}
		exclusively(ctx, interval, fn)
		wait = interval
	}
}
