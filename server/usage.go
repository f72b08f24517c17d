package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/plan"
	"svc.dev/svc/platform"
	"svc.dev/svc/receipt"
	"svc.dev/svc/storage"
)

const (
	evCeilingReached     = "svc.usage.ceiling_reached"
	evCeilingApproaching = "svc.usage.ceiling_approaching"
	evCeilingChanged     = "svc.usage.ceiling_changed"
)

// usageMeter meters live-mode usage that has no transaction of its own to ride in (API
// operations): every increment is appended to a log file in the data directory before the call
// is answered (one small write, no fsync: it survives the process being killed), and the log is
// added to the stored counters every quarter second, in one transaction that also records how
// far the log was read. So each increment is counted exactly once across process crashes; at
// start, what the last process logged but did not add is added. (An operating-system crash can
// lose the log's last unsynced writes.)
type usageMeter struct {
	s       *Server
	mu      sync.Mutex // guards log and end
	log     *os.File
	end     int64 // bytes in the log
	read    int64 // bytes of the log added to the counters
	stop    chan struct{}
	done    chan struct{}
	flushMu sync.Mutex
}

// usageLogFile is the usage log in the data directory.
const usageLogFile = "usage.log"

// usageLogRotate is the log size from which a flush that read it all starts it again (a
// variable for the tests).
var usageLogRotate int64 = 1 << 20

func newUsageMeter(s *Server) (*usageMeter, error) {
	f, err := os.OpenFile(filepath.Join(s.cfg.DataDir, usageLogFile), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("usage log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("usage log: %w", err)
	}
	read, err := s.store.Usage().LogOffset(context.Background())
	if err != nil {
		f.Close()
		return nil, err
	}
	if read > fi.Size() { // the log was started again after it was all read
		read = 0
	}
	m := &usageMeter{s: s, log: f, end: fi.Size(), read: read, stop: make(chan struct{}), done: make(chan struct{})}
	m.flush() // what the last process logged and did not add
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
	return m, nil
}

// add meters qty of a meter for an application (and its organization) this month: logged
// before it returns.
func (m *usageMeter) add(orgID, appID, meter string, qty float64) {
	month := platform.Month(m.s.cfg.Now())
	q := strconv.FormatFloat(qty, 'g', -1, 64)
	line := "org:" + orgID + "\t" + month + "\t" + meter + "\t" + q + "\n"
	if appID != "" {
		line += "app:" + appID + "\t" + month + "\t" + meter + "\t" + q + "\n"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.log.WriteString(line)
	m.end += int64(n)
	if err != nil {
		m.s.log.Error("usage metering: log write failed", "err", err)
	}
}

// usageDeltas are the deltas that meter qty for an organization and one of its applications.
func usageDeltas(orgID, appID, month, meter string, qty float64) []storage.UsageDelta {
	return []storage.UsageDelta{
		{Scope: "org:" + orgID, Month: month, Meter: meter, Quantity: qty},
		{Scope: "app:" + appID, Month: month, Meter: meter, Quantity: qty},
	}
}

// flush adds what the log holds beyond what was added, then starts the log again once it is
// large and all read.
func (m *usageMeter) flush() {
	m.flushMu.Lock()
	defer m.flushMu.Unlock()
	m.mu.Lock()
	end := m.end
	m.mu.Unlock()
	if end > m.read {
		buf := make([]byte, end-m.read)
		n, err := m.log.ReadAt(buf, m.read)
		if err != nil && n < len(buf) {
			m.s.log.Error("usage metering: log read failed", "err", err)
			return
		}
		deltas, used := parseUsageLog(buf)
		if used > 0 {
			if err := m.s.store.Usage().AddFromLog(context.Background(), deltas, m.read+int64(used)); err != nil {
				m.s.log.Error("usage metering: write failed", "err", err) // the log keeps it for the next flush
				return
			}
			m.read += int64(used)
			orgs := map[string]bool{}
			for _, d := range deltas {
				if org, ok := strings.CutPrefix(d.Scope, "org:"); ok {
					orgs[org] = true
				}
			}
			for org := range orgs {
				m.s.checkCeiling(org)
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.read == m.end && m.end >= usageLogRotate {
		if err := m.log.Truncate(0); err != nil {
			m.s.log.Error("usage metering: log truncate failed", "err", err)
			return
		}
		m.end = 0
		// Before this is stored, the offset exceeds the log's size, which the next start
		// reads as "started again".
		if err := m.s.store.Usage().AddFromLog(context.Background(), nil, 0); err == nil {
			m.read = 0
		} else {
			m.read = 0
			m.s.log.Error("usage metering: log offset reset failed", "err", err)
		}
	}
}

// parseUsageLog sums the complete lines of a piece of the usage log into deltas and says how
// many bytes they took (a last line without its newline is left for later).
func parseUsageLog(b []byte) ([]storage.UsageDelta, int) {
	sums := map[storage.UsageDelta]float64{}
	var order []storage.UsageDelta
	used := 0
	for {
		i := bytes.IndexByte(b[used:], '\n')
		if i < 0 {
			break
		}
		f := strings.Split(string(b[used:used+i]), "\t")
		used += i + 1
		if len(f) != 4 {
			continue
		}
		q, err := strconv.ParseFloat(f[3], 64)
		if err != nil {
			continue
		}
		k := storage.UsageDelta{Scope: f[0], Month: f[1], Meter: f[2]}
		if _, ok := sums[k]; !ok {
			order = append(order, k)
		}
		sums[k] += q
	}
	out := make([]storage.UsageDelta, len(order))
	for i, k := range order {
		k.Quantity = sums[k]
		out[i] = k
	}
	return out, used
}

func (m *usageMeter) close() {
	close(m.stop)
	<-m.done
	m.log.Close()
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
	u, err := s.store.Usage().Counters(ctx, scope, month)
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
	c, ok, err := s.store.Usage().CeilingOf(ctx, orgID)
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
	u, err := s.store.Usage().Counters(ctx, "org:"+orgID, month)
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
	if err := s.store.Usage().Add(ctx, []storage.UsageDelta{{Scope: "org:" + orgID, Month: month, Meter: marker, Quantity: 1}}); err != nil {
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

// liveOnly refuses a test key on live-mode organization state (usage, spend, the ceiling):
// test mode is unbilled, and a test key touches only test-mode state.
func liveOnly(c *Caller) error {
	if c.Key != nil && c.Key.Mode != platform.ModeLive {
		return newProblem(http.StatusForbidden, codeForbidden, "Usage and the spending ceiling are live-mode settings: use a live key or a signed-in owner.")
	}
	return nil
}

func (s *Server) getUsage(ctx context.Context, req *svcv1.GetUsageRequest) (*svcv1.Usage, error) {
	c := callerFrom(ctx)
	if err := liveOnly(c); err != nil {
		return nil, err
	}
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
	if err := liveOnly(c); err != nil {
		return nil, err
	}
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
	if err := liveOnly(c); err != nil {
		return nil, err
	}
	if c.Key != nil && !slices.Contains(c.Key.Scopes, "billable_execute") {
		return nil, newProblem(http.StatusForbidden, codeForbidden, "Changing the spending ceiling needs a live key with the billable_execute scope, or the organization's owner.")
	}
	org, err := usageOrg(c, req.OrgId)
	if err != nil {
		return nil, err
	}
	if c.User != nil {
		o, err := s.accounts.Org(ctx, org)
		if err != nil || o.OwnerID != c.User.ID {
			return nil, newProblem(http.StatusForbidden, codeForbidden, "Only the organization's owner changes its spending ceiling.")
		}
	}
	now := s.cfg.Now().UTC()
	before := s.ceilingCents(ctx, org)
	if err := s.store.Usage().SetCeiling(ctx, org, storage.Ceiling{Cents: req.GetCeilingCents(), UpdatedAt: now.Format(time.RFC3339)}); err != nil {
		return nil, err
	}
	s.emit(ctx, platform.Tenant{Owner: org, Mode: platform.ModeLive}, evCeilingChanged, "/v1/usage", org,
		map[string]any{"org_id": org, "ceiling_cents": float64(req.GetCeilingCents()), "previous_ceiling_cents": float64(before)})
	return &svcv1.Ceiling{OrgId: org, CeilingCents: req.GetCeilingCents(), Currency: "usd", UpdatedAt: timestamppb.New(now)}, nil
}

// charger meters executions for the embedding package's finisher (svc.Options.Charger).
type charger struct{ s *Server }

func (c charger) Charge(ctx context.Context, p *svcv1.Plan, x *svcv1.Execution, objs []receipt.Object) ([]receipt.Charge, error) {
	return c.s.chargeExecution(ctx, p, x, objs)
}

// chargeExecution meters a live execution's usage exactly once (one execution, the data it
// moved, a month of storing what it preserved) and returns the receipt's charges: each meter's
// quantity and what it added to this month's bill.
func (s *Server) chargeExecution(ctx context.Context, p *svcv1.Plan, x *svcv1.Execution, objs []receipt.Object) ([]receipt.Charge, error) {
	charges := []receipt.Charge{}
	if p.GetMeter() == nil {
		return charges, nil // test mode and end users are not billed
	}
	app, err := s.devs.Application(ctx, p.GetActor().GetApplicationId())
	if err != nil {
		return nil, err
	}
	var moved, preserved int64
	for _, o := range objs {
		if o.Preserved {
			preserved += o.Bytes
		}
		if o.Preserved || o.Transferred {
			moved += o.Bytes
		}
	}
	month := platform.Month(s.cfg.Now())
	qty := map[string]float64{platform.MeterExecutions: 1, platform.MeterDataTransferred: float64(moved) / 1e9,
		platform.MeterDeveloperStorage: float64(preserved) / 1e9}
	s.usage.flush()
	before, err := s.store.Usage().Counters(ctx, "org:"+app.OrgID, month)
	if err != nil {
		return nil, err
	}
	var deltas []storage.UsageDelta
	after := map[string]float64{}
	for k, v := range before {
		after[k] = v
	}
	for _, r := range platform.RateCard {
		q, ok := qty[r.Meter]
		if !ok || q == 0 {
			continue
		}
		after[r.Meter] += q
		for _, scope := range []string{"org:" + app.OrgID, "app:" + app.ID} {
			deltas = append(deltas, storage.UsageDelta{Scope: scope, Month: month, Meter: r.Meter, Quantity: q})
		}
	}
	if _, err := s.store.Usage().AddOnce(ctx, "execution:"+x.GetId(), deltas); err != nil {
		return nil, err
	}
	b0, b1 := platform.RateMonth(month, before), platform.RateMonth(month, after)
	for i, r := range platform.RateCard {
		q, ok := qty[r.Meter]
		if !ok || q == 0 {
			continue
		}
		charges = append(charges, receipt.Charge{Meter: r.Meter, Quantity: q, Unit: r.Unit,
			Cents: b1.Lines[i].Cents - b0.Lines[i].Cents, UsageEventID: id.New("use")})
	}
	return charges, nil
}
