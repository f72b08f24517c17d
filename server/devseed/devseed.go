// Package devseed seeds a `svc serve --dev` server: a developer account with an organization,
// an application with test and live keys and a test-mode connection, simulated sources, an
// executed clean-up with its receipt, a destination, creator revenue and an account export,
// all made through the same code paths as the API; and dev-credentials.json (0600) to call
// it with.
package devseed

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	"svc.dev/svc"
	"svc.dev/svc/creator"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/job"
	"svc.dev/svc/providers"
	"svc.dev/svc/wire"

	"svc.dev/svc/internal/atomicfile"
)

// Credentials is dev-credentials.json: everything a developer needs to call a --dev server.
type Credentials struct {
	BaseURL       string `json:"base_url"`
	TestAPIKey    string `json:"test_api_key"`
	LiveAPIKey    string `json:"live_api_key"`
	ConnectionID  string `json:"connection_id"`
	SessionCookie string `json:"session_cookie"`
	UserID        string `json:"user_id"`
	OrgID         string `json:"org_id"`
	ApplicationID string `json:"application_id"`
}

// CredentialsFile is the name of the credentials file in the data directory.
const CredentialsFile = "dev-credentials.json"

// Deps are what seeding needs of a running server: its data directory, the embedding
// instance, the platform's accounts and developers, its job runner, and how it writes an
// account export.
type Deps struct {
	DataDir    string
	Instance   *svc.Instance
	Accounts   *platform.Accounts
	Developers *platform.Developers
	Jobs       *job.Runner
	Export     func(ctx context.Context, userID, jobID string, p *job.Progress) (map[string]any, error)
}

// Seed prepares a --dev server: unless dev-credentials.json already holds working
// credentials, it runs a seed job that creates, through the same code paths as the API, a
// developer account, an organization, an application with test and live keys, and a test-mode
// connection from the account to the application; then it writes dev-credentials.json (0600).
func Seed(ctx context.Context, d Deps, baseURL string, opts *Options) (*Credentials, error) {
	if opts == nil {
		opts = &Options{}
	}
	path := filepath.Join(d.DataDir, CredentialsFile)
	creds, err := d.existingCredentials(ctx, path)
	if err != nil {
		if creds, err = d.runSeedJob(ctx, opts); err != nil {
			return nil, err
		}
	}
	if err := d.connectVendors(ctx, creds, opts.Vendors); err != nil {
		return nil, fmt.Errorf("seed: vendor sources: %w", err)
	}
	creds.BaseURL = baseURL
	return creds, writeJSON(path, creds)
}

// Vendor is a source the dev tenant has at a vendor provider: usually a local fake of the
// vendor's API (internal/vendorfake), started by each `svc serve --dev`.
type Vendor struct {
	Provider providers.Name
	Kind     string // "mail" or "files"
	Label    string // its display name, which also finds it again at the next start
	Config   providers.Config
	// SourceRef is the source at the provider (a shared drive, "drive:ID"); "" means
	// "default", the account's own.
	SourceRef string
}

// connectVendors connects each vendor source in the dev tenant, through the application's
// connection like the seeded sources; one already there (by provider and label) is pointed
// at the new configuration instead, since a fake's address changes with each start.
func (d Deps) connectVendors(ctx context.Context, creds *Credentials, vendors []Vendor) error {
	if len(vendors) == 0 {
		return nil
	}
	sc := d.Instance.Tenant(platform.Tenant{Owner: creds.UserID, Mode: platform.ModeTest})
	have, err := sc.Sources(ctx)
	if err != nil {
		return err
	}
	for _, v := range vendors {
		found := ""
		for _, src := range have {
			if src.GetDisplayName() == v.Label && wire.EnumString(src.GetProvider().Descriptor(), src.GetProvider().Number()) == string(v.Provider) {
				found = src.GetId()
			}
		}
		if found != "" {
			if err := sc.ReconfigureSource(ctx, found, v.Config); err != nil {
				return fmt.Errorf("%s: %w", v.Label, err)
			}
			continue
		}
		ref := v.SourceRef
		if ref == "" {
			ref = "default"
		}
		_, err := sc.ConnectSource(ctx, svc.SourceSpec{Provider: v.Provider, SourceRef: ref, Kind: v.Kind, DisplayName: v.Label,
			Config: v.Config, ConnectionID: creds.ConnectionID, ApplicationID: creds.ApplicationID})
		if err != nil {
			return fmt.Errorf("%s: %w", v.Label, err)
		}
	}
	return nil
}

func (d Deps) existingCredentials(ctx context.Context, path string) (*Credentials, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var creds Credentials
	if err := json.Unmarshal(data, &creds); err != nil {
		return nil, err
	}
	if _, err := d.Developers.AuthenticateKey(ctx, creds.TestAPIKey); err != nil {
		return nil, err
	}
	if _, err := d.Accounts.Authenticate(ctx, creds.SessionCookie); err != nil {
		return nil, err
	}
	return &creds, nil
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(data, '\n'), 0o600)
}

// Options shape the dev tenant.
type Options struct {
	// Sources are extra sources to connect in the test tenant (a local folder to try
	// executions on, say).
	Sources []svc.SourceSpec
	// NoExecution skips the seeded clean-up execution (tests that want an empty tenant).
	NoExecution bool
	// Vendors are the vendor sources to connect, or to point at their new configuration when
	// the dev tenant has them from an earlier start.
	Vendors []Vendor
	// DriveObjects is how many files the simulated drive holds (0: DefaultDriveObjects). Its
	// files are real bytes once vaulted or exported: about 9 MiB each on average (6 files
	// are 56 MiB, 1,000 are 8.6 GiB).
	DriveObjects int
}

// DefaultDriveObjects keeps the simulated drive small enough for the README's tour to stay
// under 1 GB on disk (with the 250-message mailbox, 147 MiB); svc serve --dev-drive-objects
// chooses a bigger one for load work.
const DefaultDriveObjects = 6

// runSeedJob records a seed job and runs it to completion.
func (d Deps) runSeedJob(ctx context.Context, opts *Options) (*Credentials, error) {
	password, err := platform.NewToken("", 24)
	if err != nil {
		return nil, err
	}
	email := "dev+" + id.New("usr")[4:] + "@svc.localhost"
	name := "Dev User"
	u, session, err := d.Accounts.SignUp(ctx, email, password, &name, "en")
	if err != nil {
		return nil, fmt.Errorf("seed: sign up: %w", err)
	}
	tenant := platform.Tenant{Owner: u.ID, Mode: platform.ModeTest}.String()
	var creds *Credentials
	_, runErr := d.Jobs.Run(ctx, tenant, svcv1.JobKind_JOB_KIND_SEED, func(ctx context.Context, p *job.Progress) (map[string]any, error) {
		var err error
		if creds, err = d.seedTenant(ctx, u, session, opts); err != nil {
			return nil, fmt.Errorf("seed: %w", errors.Join(&job.PublicError{Msg: "seed failed"}, err))
		}
		return map[string]any{
			"user_id": creds.UserID, "org_id": creds.OrgID, "application_id": creds.ApplicationID, "connection_id": creds.ConnectionID,
		}, nil
	})
	if runErr != nil {
		return nil, runErr
	}
	// The dev tenant has a finished account export to show (GET /v1/jobs?kind=export).
	ej, err := d.Jobs.Create(ctx, tenant, svcv1.JobKind_JOB_KIND_EXPORT)
	if err != nil {
		return nil, err
	}
	if _, err := d.Jobs.Execute(ctx, tenant, ej.GetId(), func(ctx context.Context, p *job.Progress) (map[string]any, error) {
		return d.Export(ctx, u.ID, ej.GetId(), p)
	}); err != nil {
		return nil, fmt.Errorf("seed: export: %w", err)
	}
	return creds, nil
}

// seedTenant is the body of the seed job. Later capabilities extend it with their data.
func (d Deps) seedTenant(ctx context.Context, u *platform.User, session string, opts *Options) (*Credentials, error) {
	org, err := d.Accounts.CreateOrg(ctx, u.ID, "Dev Org")
	if err != nil {
		return nil, err
	}
	app, err := d.Developers.CreateApplication(ctx, org.ID, "Dev App", platform.OperationClasses, []string{"http://127.0.0.1/callback"})
	if err != nil {
		return nil, err
	}
	_, testKey, err := d.Developers.CreateKey(ctx, app.ID, platform.ModeTest, nil)
	if err != nil {
		return nil, err
	}
	_, liveKey, err := d.Developers.CreateKey(ctx, app.ID, platform.ModeLive, nil)
	if err != nil {
		return nil, err
	}
	conn, err := d.Developers.Connect(ctx, app.ID, u.ID, platform.ModeTest, platform.Grant{OperationClasses: platform.OperationClasses})
	if err != nil {
		return nil, err
	}
	// Test mode is simulated: a mailbox and a drive of synthetic content (and a local folder as
	// a destination, below).
	test := platform.Tenant{Owner: u.ID, Mode: platform.ModeTest}
	var mailbox *svcv1.Source
	for _, src := range append([]svc.SourceSpec{
		{Provider: providers.Simulated, SourceRef: "mail/dev", Kind: "mail", DisplayName: "Simulated mailbox", Email: u.Email,
			Config: providers.Config{"seed": "42", "objects": "250"}, ConnectionID: conn.ID, ApplicationID: app.ID},
		{Provider: providers.Simulated, SourceRef: "files/dev", Kind: "files", DisplayName: "Simulated drive",
			Config: providers.Config{"seed": "42", "objects": strconv.Itoa(cmp.Or(opts.DriveObjects, DefaultDriveObjects))}, ConnectionID: conn.ID, ApplicationID: app.ID},
	}, opts.Sources...) {
		src.ConnectionID, src.ApplicationID = conn.ID, app.ID
		made, err := d.Instance.Tenant(test).ConnectSource(ctx, src)
		if err != nil {
			return nil, err
		}
		if src.SourceRef == "mail/dev" {
			mailbox = made
		}
	}
	if !opts.NoExecution {
		if err := d.seedExecution(ctx, test); err != nil {
			return nil, fmt.Errorf("seed execution: %w", err)
		}
	}
	if _, err := d.seedDestination(ctx, test); err != nil {
		return nil, fmt.Errorf("seed destination: %w", err)
	}
	if err := d.seedCreator(ctx, test, mailbox); err != nil {
		return nil, fmt.Errorf("seed creator revenue: %w", err)
	}
	return &Credentials{TestAPIKey: testKey, LiveAPIKey: liveKey, ConnectionID: conn.ID, SessionCookie: session,
		UserID: u.ID, OrgID: org.ID, ApplicationID: app.ID}, nil
}

// ExportDir is the folder, inside the data directory, that the dev tenant's destination
// writes to.
const ExportDir = "dev-export"

// seedDestination gives the dev tenant a destination that can really be written to: a local
// folder (vendor_d_local rooted at DATA/dev-export) for export and migrate plans to copy into.
// It is a destination only, not a source: plans over every connected source do not see it.
func (d Deps) seedDestination(ctx context.Context, tenant platform.Tenant) (*svcv1.Destination, error) {
	dir := filepath.Join(d.DataDir, ExportDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return d.Instance.Tenant(tenant).AddDestination(ctx, svc.DestinationSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": abs},
		Label: "Local export folder"})
}

// seedExecution runs a clean-up of a small simulated mailbox through the embedding package, as
// the dev user (the tenant's owner): plan, authorize, execute; and waits for its receipt, so
// the dev tenant starts with an executed plan, vault objects, manifests and a signed receipt.
func (d Deps) seedExecution(ctx context.Context, tenant platform.Tenant) error {
	t := d.Instance.Tenant(tenant)
	src, err := t.ConnectSource(ctx, svc.SourceSpec{Provider: providers.Simulated, SourceRef: "mail/archive", Kind: "mail",
		DisplayName: "Simulated archive mailbox", Config: providers.Config{"seed": "7", "objects": "60"}})
	if err != nil {
		return err
	}
	p, err := t.BuildPlan(ctx, svc.PlanRequest{Intent: svcv1.PlanIntent_PLAN_INTENT_SVC, SourceIDs: []string{src.Id},
		Policy: &svcv1.SourcePolicy{MinAgeDays: proto.Int64(30), RemovePromotional: proto.Bool(true)}})
	if err != nil {
		return err
	}
	if p, err = t.AuthorizePlan(ctx, p.PlanId, p.Hash, nil); err != nil {
		return err
	}
	x, err := t.Execute(ctx, p.PlanId, nil)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	// An execution that ended without completing (a provider that failed its assets) is still
	// an execution to show, with its receipt; only one that did not end fails the seed.
	if _, err := t.Wait(wctx, x.Id); err != nil && !errors.Is(err, svc.ErrNotCompleted) {
		return fmt.Errorf("execution %s did not finish: %w", x.Id, err)
	}
	return nil
}

// seedStatements are the dev tenant's creator revenue: seven months of a membership platform's
// statements, whose platform fee rises in June (a fee change to find).
//
//go:embed seeddata/fanclub.csv
var seedStatements []byte

// seedCreator connects a statement source with the dev statements and reconciles it, so that
// --dev shows reconciled revenue items and an open anomaly; then an inbox source over the
// simulated mailbox's payout mail, which the reconcile loop reads a minute after start
// (reading 2,000 messages here would slow every start of a fresh dev server).
func (d Deps) seedCreator(ctx context.Context, tenant platform.Tenant, mailbox *svcv1.Source) error {
	sc := d.Instance.Tenant(tenant)
	src, err := sc.CreateCreatorSource(ctx, creator.CreateRequest{Kind: creator.KindStatement, Label: "Fan club statements"})
	if err != nil {
		return err
	}
	if err := sc.UploadStatement(ctx, src.ID, "fanclub.csv", seedStatements); err != nil {
		return err
	}
	if _, err = sc.ReconcileCreator(ctx, nil); err != nil {
		return err
	}
	if mailbox == nil {
		return nil
	}
	_, err = sc.ConnectCreatorInbox(ctx, mailbox.Id, "Simulated mailbox payouts")
	return err
}
