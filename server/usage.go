package server

import (
	"context"
	"net/http"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/plan"
	"svc.dev/svc/platform"
	"svc.dev/svc/store"
)

const (
	evCeilingReached     = "svc.usage.ceiling_reached"
	evCeilingApproaching = "svc.usage.ceiling_approaching"
	evCeilingChanged     = "svc.usage.ceiling_changed"
)

// usageMeter accumulates live-mode usage in memory and adds it to the stored counters in one
// transaction every quarter second, so that metering every API call costs the call no disk
// write. Each increment is applied exactly once (a failed transaction is retried whole); a
// crash loses at most the last quarter second of API operations.
type usageMeter struct {
	s       *Server
	mu      sync.Mutex
	pending map[store.UsageDelta]float64 // Quantity is zero in keys
	stop    chan struct{}
	done    chan struct{}
	flushMu sync.Mutex
}

func newUsageMeter(s *Server) *usageMeter {
	m := &usageMeter{s: s, pending: map[store.UsageDelta]float64{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				m.flush()
				return
			case <-t.C:
				m.flush()
			}
		}
	}()
	return m
}

// add meters qty of a meter for an application (and its organization) this month.
func (m *usageMeter) add(orgID, appID, meter string, qty float64) {
	month := platform.Month(m.s.cfg.Now())
	m.mu.Lock()
	m.pending[store.UsageDelta{Scope: "org:" + orgID, Month: month, Meter: meter}] += qty
	if appID != "" {
		m.pending[store.UsageDelta{Scope: "app:" + appID, Month: month, Meter: meter}] += qty
	}
	m.mu.Unlock()
}

// usageDeltas are the deltas that meter qty for an organization and one of its applications.
func usageDeltas(orgID, appID, month, meter string, qty float64) []store.UsageDelta {
	return []store.UsageDelta{
		{Scope: "org:" + orgID, Month: month, Meter: meter, Quantity: qty},
		{Scope: "app:" + appID, Month: month, Meter: meter, Quantity: qty},
	}
}

// flush writes what was metered so far.
func (m *usageMeter) flush() {
	m.flushMu.Lock()
	defer m.flushMu.Unlock()
	m.mu.Lock()
	if len(m.pending) == 0 {
		m.mu.Unlock()
		return
	}
	batch := m.pending
	m.pending = map[store.UsageDelta]float64{}
	m.mu.Unlock()
	deltas := make([]store.UsageDelta, 0, len(batch))
	orgs := map[string]bool{}
	for k, q := range batch {
		k.Quantity = q
		deltas = append(deltas, k)
		if len(k.Scope) > 4 && k.Scope[:4] == "org:" {
			orgs[k.Scope[4:]] = true
		}
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = m.s.db.AddUsage(context.Background(), deltas); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		m.s.log.Error("usage metering: write failed", "err", err)
		m.mu.Lock() // keep the counts for the next flush rather than lose them
		for _, d := range deltas {
			q := d.Quantity
			d.Quantity = 0
			m.pending[d] += q
		}
		m.mu.Unlock()
		return
	}
	for org := range orgs {
		m.s.checkCeiling(org)
	}
}

func (m *usageMeter) close() {
	close(m.stop)
	<-m.done
}

// meterCall meters an API operation made with a live key.
func (s *Server) meterCall(c *Caller, out *outcome) {
	if c.Key == nil || c.Key.Mode != platform.ModeLive || out.status == http.StatusTooManyRequests {
		return
	}
	s.usage.add(c.Key.OrgID, c.Key.AppID, platform.MeterAPIOperations, 1)
}

// bill rates a scope's month; connected end users are counted from the connections.
func (s *Server) bill(ctx context.Context, orgID, appID, month string) (platform.Bill, error) {
	s.usage.flush()
	scope := "org:" + orgID
	if appID != "" {
		scope = "app:" + appID
	}
	u, err := s.db.Usage(ctx, scope, month)
	if err != nil {
		return platform.Bill{}, err
	}
	users, err := s.connectedUsers(ctx, orgID, appID, month)
	if err != nil {
		return platform.Bill{}, err
	}
	u[platform.MeterConnectedUsers] = float64(users)
	return platform.RateMonth(month, u), nil
}

// connectedUsers counts the distinct end users with a live connection to the organization's
// applications (or one application) that was active during the month.
func (s *Server) connectedUsers(ctx context.Context, orgID, appID, month string) (int, error) {
	apps, err := s.devs.Applications(ctx, orgID)
	if err != nil {
		return 0, err
	}
	start, _ := time.Parse("2006-01", month)
	end := start.AddDate(0, 1, 0)
	users := map[string]bool{}
	for _, a := range apps {
		if appID != "" && a.ID != appID {
			continue
		}
		conns, err := s.devs.ConnectionsOfApp(ctx, a.ID)
		if err != nil {
			return 0, err
		}
		for _, c := range conns {
			if c.Mode == platform.ModeLive && c.CreatedAt.Before(end) && (c.RevokedAt == nil || c.RevokedAt.After(start)) {
				users[c.UserID] = true
			}
		}
	}
	return len(users), nil
}

func (s *Server) ceilingCents(ctx context.Context, orgID string) int64 {
	c, ok, err := s.db.CeilingOf(ctx, orgID)
	if err != nil || !ok {
		return platform.DefaultCeilingCents
	}
	return c.Cents
}

// checkCeiling emits svc.usage.ceiling_approaching the first time in a month an
// organization's live spend passes 80% of its ceiling, and svc.usage.ceiling_reached the first
// time it reaches it (each remembered by a marker counter in the month's usage).
func (s *Server) checkCeiling(orgID string) {
	ctx := context.Background()
	month := platform.Month(s.cfg.Now())
	u, err := s.db.Usage(ctx, "org:"+orgID, month)
	if err != nil || u["ceiling_notified"] > 0 {
		return
	}
	b := platform.RateMonth(month, u)
	ceiling := s.ceilingCents(ctx, orgID)
	typ, marker := evCeilingReached, "ceiling_notified"
	switch {
	case b.TotalCents >= ceiling:
	case b.TotalCents*5 >= ceiling*4 && u["ceiling_approach_notified"] == 0:
		typ, marker = evCeilingApproaching, "ceiling_approach_notified"
	default:
		return
	}
	if err := s.db.AddUsage(ctx, []store.UsageDelta{{Scope: "org:" + orgID, Month: month, Meter: marker, Quantity: 1}}); err != nil {
		return
	}
	s.emit(ctx, platform.Tenant{Owner: orgID, Mode: platform.ModeLive}, typ, "/v1/usage", orgID,
		map[string]any{"org_id": orgID, "month": month, "total_cents": float64(b.TotalCents), "ceiling_cents": float64(ceiling)})
}

// planBilling is the commercial context of a live developer key for plan estimates and
// authorization: this month's usage, the ceiling, and what is already spent.
func (s *Server) planBilling(ctx context.Context, c *Caller) (*plan.Billing, error) {
	b := c.billing()
	if b == nil {
		return nil, nil
	}
	month := platform.Month(s.cfg.Now())
	bill, err := s.bill(ctx, c.Key.OrgID, "", month)
	if err != nil {
		return nil, err
	}
	u := map[string]float64{}
	for _, l := range bill.Lines {
		u[l.Meter] = l.Quantity
	}
	b.Usage = plan.Usage{Plans: int64(u[platform.MeterPlans]), Executions: int64(u[platform.MeterExecutions]),
		TransferredBytes: int64(u[platform.MeterDataTransferred] * 1e9), StoredByteMonths: int64(u[platform.MeterDeveloperStorage] * 1e9)}
	b.CeilingCents = s.ceilingCents(ctx, c.Key.OrgID)
	b.SpentCents = bill.TotalCents
	return b, nil
}

func usageProto(orgID, appID string, b platform.Bill, ceiling int64) *svcv1.Usage {
	u := &svcv1.Usage{OrgId: orgID, Month: b.Month, RateCardVersion: b.RateCardVersion, Currency: "usd", BaseCents: b.BaseCents,
		OverageCents: b.OverageCents, TotalCents: b.TotalCents, CeilingCents: ceiling, WithinCeiling: b.TotalCents <= ceiling}
	if appID != "" {
		u.ApplicationId = &appID
	}
	for _, l := range b.Lines {
		u.Lines = append(u.Lines, &svcv1.UsageLine{Meter: l.Meter, Unit: l.Unit, Quantity: l.Quantity, Included: l.Included, Overage: l.Overage, Cents: l.Cents})
	}
	return u
}

// usageOrg is the organization a usage request is about: the key's, or the one named (which
// the signed-in user must belong to).
func usageOrg(c *Caller, orgID *string) (string, error) {
	if c.Key != nil {
		if orgID != nil && *orgID != c.Key.OrgID {
			return "", newProblem(http.StatusNotFound, codeNotFound, "The organization does not exist.")
		}
		return c.Key.OrgID, nil
	}
	if orgID == nil {
		return "", invalid("org_id", "is required with a session")
	}
	return *orgID, memberOf(c, *orgID)
}

func (s *Server) getUsage(ctx context.Context, req *svcv1.GetUsageRequest) (*svcv1.Usage, error) {
	c := callerFrom(ctx)
	org, err := usageOrg(c, req.OrgId)
	if err != nil {
		return nil, err
	}
	month := platform.Month(s.cfg.Now())
	if req.Month != nil {
		month = req.GetMonth()
	}
	b, err := s.bill(ctx, org, "", month)
	if err != nil {
		return nil, err
	}
	return usageProto(org, "", b, s.ceilingCents(ctx, org)), nil
}

func (s *Server) getApplicationUsage(ctx context.Context, req *svcv1.GetApplicationUsageRequest) (*svcv1.Usage, error) {
	c := callerFrom(ctx)
	app, err := s.application(ctx, c, req.GetId())
	if err != nil {
		return nil, err
	}
	month := platform.Month(s.cfg.Now())
	if req.Month != nil {
		month = req.GetMonth()
	}
	b, err := s.bill(ctx, app.OrgID, app.ID, month)
	if err != nil {
		return nil, err
	}
	return usageProto(app.OrgID, app.ID, b, s.ceilingCents(ctx, app.OrgID)), nil
}

func (s *Server) setCeiling(ctx context.Context, req *svcv1.SetCeilingRequest) (*svcv1.Ceiling, error) {
	c := callerFrom(ctx)
	org, err := usageOrg(c, req.OrgId)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now().UTC()
	before := s.ceilingCents(ctx, org)
	if err := s.db.SetCeiling(ctx, org, store.Ceiling{Cents: req.GetCeilingCents(), UpdatedAt: now.Format(time.RFC3339)}); err != nil {
		return nil, err
	}
	s.emit(ctx, platform.Tenant{Owner: org, Mode: platform.ModeLive}, evCeilingChanged, "/v1/usage", org,
		map[string]any{"org_id": org, "ceiling_cents": float64(req.GetCeilingCents()), "previous_ceiling_cents": float64(before)})
	return &svcv1.Ceiling{OrgId: org, CeilingCents: req.GetCeilingCents(), Currency: "usd", UpdatedAt: timestamppb.New(now)}, nil
}
