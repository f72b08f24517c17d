// Package server is svc's API edge: one implementation of every svc.v1 method served over
// Connect (and gRPC, gRPC-Web) and over the spec's REST paths, with authentication, tenancy,
// validation, idempotency, rate limits, pagination and RFC 9457 problem details shared by both.
// It is the only package that turns domain errors into wire errors.
package server

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	"svc.dev/svc/billing"
	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/job"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/webhook"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/builtin"
	"svc.dev/svc/receipt"
	"svc.dev/svc/store"
	"svc.dev/svc/vault"
	"svc.dev/svc/vault/backend"
	"svc.dev/svc/wire"
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
	// ScrubInterval is how often every tenant's vault is scrubbed (re-read, re-hashed, marked
	// corrupt or repaired) as a job; 0 means DefaultScrubInterval, negative never.
	ScrubInterval time.Duration
	// ColdAfter is how long after its commit a vault object moves to the cold tier, checked
	// after each scrub; 0 means DefaultColdAfter, negative never.
	ColdAfter time.Duration
	// Vault chooses the vault's storage backends (default: local disk in the data directory).
	Vault VaultBackends
	// RequestTimeout is how long a request may take to start its response before the client
	// gets 503 with Retry-After (default DefaultRequestTimeout).
	RequestTimeout time.Duration
	// StoreOptions tunes the bbolt store (tests: a small initial map).
	StoreOptions *store.Options
	// OutboundTLS configures TLS for the requests svc makes to third parties' servers (one-click
	// unsubscribes); nil: the system's roots.
	OutboundTLS *tls.Config
	// BodyReadTimeout bounds how long a client may take to send a request body, so a client
	// trickling one byte at a time cannot hold a connection (default DefaultBodyReadTimeout).
	BodyReadTimeout time.Duration
	// Billing is the payment processor (billing/stripe); nil serves svc's own portal page and
	// creates no invoice items.
	Billing billing.Processor
	// DeletionGrace is how long a deleted account can still be kept by cancelling its deletion
	// job (default DefaultDeletionGrace).
	DeletionGrace time.Duration
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
	db        *store.DB
	accounts  *platform.Accounts
	devs      *platform.Developers
	idem      *platform.Idempotency
	limiter   *platform.Limiter
	cursors   *platform.Cursors
	validator protovalidate.Validator
	csrf      *http.CrossOriginProtection
	methods   map[string]*method // by procedure
	handler   http.Handler
	openapi   []byte
	providers *providers.Registry
	ownsReg   bool
	sealer    *platform.Sealer
	openedSources

	plans        *planStore
	jobs         *store.Collection[*svcv1.Job]
	sources      *store.Collection[*svcv1.Source]
	destinations *store.Collection[*svcv1.Destination]
	executions   *store.Collection[*svcv1.Execution]
	auditLog     *store.Collection[*svcv1.AuditEntry]
	audit        *batchWriter[*svcv1.AuditEntry]
	eventLog     *store.Collection[*svcv1.Event]
	usage        *usageMeter

	// engine runs executions; nil until a vault and a receipt signer are configured.
	engine    *execute.Engine
	webhooks  *webhook.Engine
	stopHooks context.CancelFunc
	keyring   *receipt.Keyring
	vault     *vault.Vault
	search    *vaultIndex
	manifests *store.Collection[*svcv1.Manifest]

	background sync.WaitGroup // work that Close waits for (the scrub loop)
	// probing is set while a readiness probe of the store runs (GET /readyz): a probe stuck
	// behind a wedged store is not joined by another.
	probing atomic.Bool

	jobRunner *job.Runner // runs jobs (export, deletion, ...)
	exportKey []byte      // authenticates export download URLs and portal pages
	biller    *billing.Biller
	exportMu  sync.Mutex // one account export at a time per tenant
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
	keys, err := dataKeys(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	db, err := store.OpenWith(filepath.Join(cfg.DataDir, "svc.db"), cfg.StoreOptions)
	if err != nil {
		return nil, err
	}
	keyring, err := receipt.OpenKeyring(filepath.Join(cfg.DataDir, "keys"))
	if err != nil {
		db.Close()
		return nil, err
	}
	ix, err := openSearch(cfg.DataDir)
	if err != nil {
		db.Close()
		return nil, err
	}
	ix.log = cfg.Logger
	vlt, err := openVault(cfg.DataDir, db, keys, cfg.Now, cfg.Vault, ix.changed)
	if err != nil {
		ix.index.Close()
		db.Close()
		return nil, err
	}
	sealer, err := platform.NewSealer(keys.Derive("sealed-secrets"))
	if err != nil {
		db.Close()
		return nil, err
	}
	v, err := protovalidate.New()
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("validator: %w", err)
	}
	s := &Server{
		cfg:           cfg,
		log:           cfg.Logger,
		db:            db,
		accounts:      platform.NewAccounts(db, &platform.AccountsOptions{Password: cfg.Password, Now: cfg.Now}),
		devs:          platform.NewDevelopers(db, cfg.Now),
		idem:          platform.NewIdempotency(db, cfg.Now),
		limiter:       platform.NewLimiter(cfg.RateLimit, cfg.Now),
		cursors:       platform.NewCursors(keys.Derive("cursor")),
		validator:     v,
		csrf:          http.NewCrossOriginProtection(),
		methods:       map[string]*method{},
		plans:         newPlanStore(db),
		jobs:          store.NewCollection(db, "jobs", func() *svcv1.Job { return &svcv1.Job{} }),
		sources:       store.NewCollection(db, "sources", func() *svcv1.Source { return &svcv1.Source{} }).WithOwnerIndex(),
		destinations:  store.NewCollection(db, "destinations", func() *svcv1.Destination { return &svcv1.Destination{} }).WithOwnerIndex(),
		executions:    store.NewCollection(db, "executions", func() *svcv1.Execution { return &svcv1.Execution{} }).WithOwnerIndex(),
		auditLog:      store.NewCollection(db, "audit", func() *svcv1.AuditEntry { return &svcv1.AuditEntry{} }),
		eventLog:      store.NewCollection(db, "events", func() *svcv1.Event { return &svcv1.Event{} }),
		providers:     cfg.Providers,
		keyring:       keyring,
		vault:         vlt,
		search:        ix,
		manifests:     store.NewCollection(db, "manifests", func() *svcv1.Manifest { return &svcv1.Manifest{} }),
		sealer:        sealer,
		openedSources: openedSources{opened: map[string]openedSource{}},
		exportKey:     keys.Derive("export-url"),
	}
	if cfg.Billing != nil {
		s.biller = billing.New(cfg.Billing, db.Billing())
	}
	s.jobRunner = job.NewRunner(jobStore{s.jobs}, jobEvents{s}, &job.Options{Now: cfg.Now, Logger: cfg.Logger})
	logErr := func(what string) func(error) {
		return func(err error) { s.log.Error("write "+what, "err", err) }
	}
	ix.vlt, ix.manifests, ix.feed = vlt, s.manifests, db.VaultChanges()
	s.audit = newBatchWriter(s.auditLog, logErr("audit log"))
	if s.usage, err = newUsageMeter(s); err != nil {
		db.Close()
		return nil, err
	}
	if s.providers == nil {
		if s.providers, err = builtin.Registry(builtin.Options{}); err != nil {
			db.Close()
			return nil, err
		}
		s.ownsReg = true
	}
	// Requests in flight when the process last stopped will never finish: free their keys.
	if _, err := s.idem.Purge(context.Background(), true); err != nil {
		db.Close()
		return nil, fmt.Errorf("purge idempotency keys: %w", err)
	}
	s.engine = execute.New(execStore{s}, engineSources{s}, engineVault{s}, finisher{s}, execute.Options{Now: cfg.Now, Logger: cfg.Logger,
		Unsubscribe: newUnsubscriber(cfg.Dev, cfg.OutboundTLS).send})
	ix.busy = func() bool { return s.engine.Running() > 0 }
	hooksCtx, stopHooks := context.WithCancel(context.Background())
	if s.webhooks, err = s.newWebhooks(hooksCtx); err != nil {
		stopHooks()
		db.Close()
		return nil, err
	}
	s.stopHooks = stopHooks
	go s.webhooks.Run(hooksCtx)
	if err := s.interruptJobs(context.Background()); err != nil {
		stopHooks()
		db.Close()
		return nil, fmt.Errorf("interrupted jobs: %w", err)
	}
	s.background.Go(func() { s.deletionLoop(hooksCtx) })
	if every := cmp.Or(cfg.ScrubInterval, DefaultScrubInterval); every > 0 {
		s.background.Go(func() { s.scrubLoop(hooksCtx, every) })
	}
	// Tenants with vault content and no search index (a data directory from before search)
	// get one built by an index job.
	s.background.Go(func() { s.indexMissing(hooksCtx) })
	s.background.Go(func() { s.search.run(hooksCtx) })
	if err := s.loadMethods(); err != nil {
		db.Close()
		return nil, err
	}
	s.register()
	if s.openapi, err = s.openAPIDocument(); err != nil {
		db.Close()
		return nil, err
	}
	s.handler = s.routes()
	// Executions that were running when the process stopped continue from their journals.
	if err := s.engine.Resume(context.Background()); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// dataKeys is the data directory's keyring, from its master key (made on first use).
func dataKeys(dataDir string) (*platform.Keyring, error) {
	master, err := loadOrCreateKey(filepath.Join(dataDir, "master.key"))
	if err != nil {
		return nil, err
	}
	return platform.NewKeyring(master)
}

// openVault opens the data directory's vault: its files under vault/ (or on the backends
// given), its records in db, its key-encryption key derived from the keyring.
// onChange, if not nil, follows the vault's changes (the search index).
func openVault(dataDir string, db *store.DB, keys *platform.Keyring, now func() time.Time, be VaultBackends,
	onChange func(context.Context, string, vault.Object)) (*vault.Vault, error) {
	var kek vault.KEK
	copy(kek[:], keys.Derive("vault-kek"))
	return vault.Open(filepath.Join(dataDir, "vault"), db.VaultMeta(), db.VaultMeta(), kek,
		&vault.Options{Now: now, Hot: be.Hot, Cold: be.Cold, OnChange: onChange})
}

// Handler returns the HTTP handler serving the whole API.
func (s *Server) Handler() http.Handler { return s.handler }

// Close closes the open providers and the store. Call it after the HTTP server has drained.
func (s *Server) Close() error {
	s.engine.Shutdown()
	s.jobRunner.Close()
	s.stopHooks()
	s.background.Wait() // the scrub loop stops between objects
	s.vault.Close()
	s.search.index.Close()
	s.usage.close()
	s.audit.close()
	s.closeAll()
	if s.ownsReg {
		s.providers.Close()
	}
	return s.db.Close()
}

// DB returns the server's store, for tools and tests that load data directly.
func (s *Server) DB() *store.DB { return s.db }

// Accounts returns the account service, for tools and tests.
func (s *Server) Accounts() *platform.Accounts { return s.accounts }

// Developers returns the developer platform service, for tools and tests.
func (s *Server) Developers() *platform.Developers { return s.devs }

// loadOrCreateKey reads the master key (every other key derives from it), or makes one. A key
// file that others may read is refused: whoever reads it can decrypt the vault and forge
// cursors, so svc will not start on it silently.
func loadOrCreateKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if err == nil {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("stat %s: %w", path, err)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			return nil, fmt.Errorf("%s has mode %#o, readable by others than its owner: run chmod 600 on it (and consider the key exposed)", path, perm)
		}
		return key, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	key = make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generate master key: %w", err)
	}
	if err := writeFileSync(path, key, 0o600); err != nil {
		return nil, err
	}
	return key, nil
}

// writeFileSync writes a file atomically: temp file, fsync, rename.
func writeFileSync(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(perm); err == nil {
		_, err = tmp.Write(data)
		if err == nil {
			err = tmp.Sync()
		}
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), path)
		}
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// loadMethods builds the method table from every service of the svc.v1 package.
func (s *Server) loadMethods() error {
	var err error
	protoregistry.GlobalFiles.RangeFilesByPackage("svc.v1", func(fd protoreflect.FileDescriptor) bool {
		svcs := fd.Services()
		for i := range svcs.Len() {
			sd := svcs.Get(i)
			for j := range sd.Methods().Len() {
				md := sd.Methods().Get(j)
				ep, _ := proto.GetExtension(md.Options(), svcv1.E_Endpoint).(*svcv1.Endpoint)
				if ep == nil {
					ep = &svcv1.Endpoint{}
				}
				m := &method{desc: md, procedure: "/" + string(sd.FullName()) + "/" + string(md.Name()), endpoint: ep}
				if f := md.Input().Fields().ByName("connection_id"); f != nil {
					m.connectionField = f
				}
				s.methods[m.procedure] = m
			}
		}
		return true
	})
	if len(s.methods) == 0 {
		err = errors.New("server: no svc.v1 services registered")
	}
	return err
}

// handle installs the implementation of a procedure.
func handle[Req, Res proto.Message](s *Server, procedure string, fn func(context.Context, Req) (Res, error)) {
	m, ok := s.methods[procedure]
	if !ok {
		panic("server: no method " + procedure)
	}
	m.call = func(ctx context.Context, req proto.Message) (proto.Message, error) {
		return fn(ctx, req.(Req))
	}
}

// newMessage returns an empty message of the descriptor's generated Go type.
func newMessage(md protoreflect.MessageDescriptor) proto.Message {
	if mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName()); err == nil {
		return mt.New().Interface()
	}
	return dynamicpb.NewMessage(md)
}

// routes assembles the HTTP surface: Connect procedures, REST routes, documents, and
// problems for everything else.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	rest := s.restRouter()
	for _, m := range s.methods {
		mux.Handle(m.procedure, s.connectHandler(m))
	}
	mux.HandleFunc("GET /v1/openapi.json", s.serveOpenAPI)
	mux.HandleFunc("GET /.well-known/svc-receipts.json", s.serveReceiptKeys)
	mux.HandleFunc("GET /healthz", s.serveHealthz)
	mux.HandleFunc("GET /readyz", s.serveReadyz)
	mux.HandleFunc("GET /v1/exports/{id}/archive", s.serveExport)
	mux.HandleFunc("GET /v1/billing/portal/page", s.servePortalPage)
	s.connectPages(mux)
	mux.Handle("/", rest)
	return s.middleware(s.withDeadline(s.cfg.RequestTimeout, mux))
}

// middleware gives every request an id, bounds its body, and turns a panic into a 500 problem.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rid := id.New("req")
		w.Header().Set("Request-Id", rid)
		w.Header().Set("X-Content-Type-Options", "nosniff") // no response is ever sniffed into a page
		ctx := context.WithValue(r.Context(), requestIDKey{}, rid)
		ctx = context.WithValue(ctx, httpRequestKey{}, r)
		r = r.WithContext(ctx)
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
			// The whole body must arrive within the timeout (the response is not bounded).
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.cfg.BodyReadTimeout))
		}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.ErrorContext(ctx, "panic", "request_id", rid, "path", r.URL.Path, "panic", fmt.Sprint(v))
				writeProblem(w, rid, newProblem(http.StatusInternalServerError, codeInternal, "The server failed to process the request."))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// rateHeaders applies the anonymous (per client address) allowance to plain HTTP routes that
// bypass the RPC pipeline, so that every response carries the RateLimit headers.
func (s *Server) rateHeaders(w http.ResponseWriter, r *http.Request) bool {
	d := s.limiter.Take("ip:" + clientIP(r))
	h := w.Header()
	h.Set("RateLimit-Limit", fmt.Sprint(d.Limit))
	h.Set("RateLimit-Remaining", fmt.Sprint(d.Remaining))
	h.Set("RateLimit-Reset", fmt.Sprint(d.Reset))
	if !d.Allowed {
		h.Set("Retry-After", fmt.Sprint(d.RetryAfter))
		writeProblem(w, requestIDFrom(r.Context()), newProblem(http.StatusTooManyRequests, codeRateLimited, "Too many requests."))
		return false
	}
	return true
}

func writeProblem(w http.ResponseWriter, requestID string, p *problem) {
	for k, v := range p.header {
		w.Header()[k] = v
	}
	body, err := wire.Marshal(p.proto(requestID))
	if err != nil {
		body = []byte(`{"type":"` + problemTypeBase + codeInternal + `","title":"Internal error","status":500,"code":"internal","request_id":"` + requestID + `","errors":[]}`)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Del("Content-Length")
	w.WriteHeader(p.status)
	w.Write(body)
}

func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	if !s.rateHeaders(w, r) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(s.openapi)
}

// isJSON reports whether a Content-Type names JSON.
func isJSON(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.TrimSpace(strings.ToLower(mt))
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// secureCookies reports whether cookies must be Secure: the request came over TLS, or the
// server's external origin is https (TLS ends at a proxy in front of svc).
func (s *Server) secureCookies(r *http.Request) bool {
	return (r != nil && r.TLS != nil) || strings.HasPrefix(strings.ToLower(s.cfg.BaseURL), "https://")
}
