package platform

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// UsageDelta adds Quantity to the counter of one meter of one scope ("org:...", "app:...")
// in one month ("2006-01").
type UsageDelta struct {
	Scope, Month, Meter string
	Quantity            float64
}

// Ceiling is an organization's monthly spending ceiling.
type Ceiling struct {
	Cents     int64  `json:"cents"`
	UpdatedAt string `json:"updated_at"`
}

// UsageStore keeps the usage counters and the ceilings (storage.Usage implements it).
type UsageStore interface {
	// Add adds deltas, in one transaction.
	Add(ctx context.Context, deltas []UsageDelta) error
	// AddOnce adds deltas unless the key was already applied, and reports whether it did.
	AddOnce(ctx context.Context, key string, deltas []UsageDelta) (applied bool, err error)
	// Counters returns a scope's counters for a month, by meter.
	Counters(ctx context.Context, scope, month string) (map[string]float64, error)
	// Orgs lists the organizations with usage counted in a month.
	Orgs(ctx context.Context, month string) ([]string, error)
	// LogOffset is how far the usage log has been applied.
	LogOffset(ctx context.Context) (int64, error)
	// AddFromLog adds deltas read from the usage log and records the offset they end at, in
	// one transaction.
	AddFromLog(ctx context.Context, deltas []UsageDelta, off int64) error
	// SetCeiling sets an organization's ceiling.
	SetCeiling(ctx context.Context, orgID string, c Ceiling) error
	// CeilingOf returns an organization's ceiling and whether it has one.
	CeilingOf(ctx context.Context, orgID string) (Ceiling, bool, error)
}

// UsageLog is a usage log kept in the store itself (storage.UsageLog), which processes sharing
// the store (replicas) share: a UsageStore that implements it meters API operations there
// instead of in a file of one process's data directory.
type UsageLog interface {
	// AppendLog logs deltas, durably, in one transaction.
	AppendLog(ctx context.Context, deltas []UsageDelta) error
	// ApplyLog adds up to limit logged increments, oldest first, to the counters and deletes
	// them from the log, in one transaction; it returns what it added and whether more remain.
	// Each increment is added by exactly one call, whichever process makes it.
	ApplyLog(ctx context.Context, limit int) (applied []UsageDelta, more bool, err error)
}

// MeterOptions configure a Meter; zero fields take defaults.
type MeterOptions struct {
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives what fails in the background (default slog.Default()).
	Logger *slog.Logger
	// OnCeiling is told, once a month per organization and kind, that its live spend passed
	// 80% of its ceiling (typ svc.usage.ceiling_approaching) or reached it
	// (svc.usage.ceiling_reached), with the event's data.
	OnCeiling func(ctx context.Context, orgID, typ string, data map[string]any)
	// RotateAt is the log size from which a flush that read it all starts it again
	// (default 1 MiB).
	RotateAt int64
}

// Meter meters live-mode usage and rates it on the rate card, with the spending ceiling.
//
// Usage that has no transaction of its own to ride in (API operations) goes through a log
// file: every increment is appended before the call is answered (one small write, no fsync:
// it survives the process being killed), and the log is added to the stored counters every
// quarter second, in one transaction that also records how far the log was read. So each
// increment is counted exactly once across process crashes; at start, what the last process
// logged but did not add is added. (An operating-system crash can lose the log's last
// unsynced writes.) Usage that has a transaction (a plan) rides in it (Deltas); an
// execution's is added once by its id (ChargeExecution).
//
// When the store keeps the log itself (it implements UsageLog: PostgreSQL, shared by
// replicas), there is no file: every increment is appended to the store's log before the call
// is answered, and any replica's flush moves logged increments into the counters, each once.
type Meter struct {
	store   UsageStore
	shared  UsageLog // non-nil: the log is in the store, and log is nil
	group   appendGroup
	devs    *Developers
	opts    MeterOptions
	mu      sync.Mutex // guards log and end
	log     *os.File
	end     int64 // bytes in the log
	read    int64 // bytes of the log added to the counters
	stop    chan struct{}
	done    chan struct{}
	flushMu sync.Mutex
}

// OpenMeter opens the usage log at logPath (creating it), adds what a previous process logged
// and did not add, and starts adding the log every quarter second until Close. When store
// keeps the log itself (UsageLog), logPath is only read: a file left there by an earlier
// process is added to the counters and removed.
func OpenMeter(logPath string, store UsageStore, devs *Developers, opts MeterOptions) (*Meter, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.RotateAt <= 0 {
		opts.RotateAt = 1 << 20
	}
	var m *Meter
	if shared, ok := store.(UsageLog); ok {
		// A file a process wrote before the log moved into the store: add what it holds
		// beyond the stored offset, once, then remove it.
		if err := drainFileLog(logPath, store); err != nil {
			return nil, err
		}
		m = &Meter{store: store, shared: shared, devs: devs, opts: opts, stop: make(chan struct{}), done: make(chan struct{})}
	} else {
		f, end, read, err := openFileLog(logPath, store)
		if err != nil {
			return nil, err
		}
		m = &Meter{store: store, devs: devs, opts: opts, log: f, end: end, read: read,
			stop: make(chan struct{}), done: make(chan struct{})}
	}
	m.Flush() // what the last process logged and did not add
	go func() {
		defer close(m.done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				m.Flush()
				return
			case <-t.C:
				m.Flush()
			}
		}
	}()
	return m, nil
}

// openFileLog opens the usage log file at logPath (creating it) and returns it with its size
// and how far it was added to the counters.
func openFileLog(logPath string, store UsageStore) (*os.File, int64, int64, error) {
	f, err := os.OpenFile(logPath, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("usage log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, 0, fmt.Errorf("usage log: %w", err)
	}
	read, err := store.LogOffset(context.Background())
	if err != nil {
		f.Close()
		return nil, 0, 0, err
	}
	if read > fi.Size() { // the log was started again after it was all read
		read = 0
	}
	return f, fi.Size(), read, nil
}

// drainFileLog adds what a usage log file holds beyond the stored offset to the counters,
// then removes the file; no file is nothing to do.
func drainFileLog(logPath string, store UsageStore) error {
	if _, err := os.Stat(logPath); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	f, end, read, err := openFileLog(logPath, store)
	if err != nil {
		return err
	}
	defer f.Close()
	if end > read {
		buf := make([]byte, end-read)
		if n, err := f.ReadAt(buf, read); err != nil && n < len(buf) {
			return fmt.Errorf("usage log: %w", err)
		}
		deltas, used := ParseUsageLog(buf)
		if err := store.AddFromLog(context.Background(), deltas, read+int64(used)); err != nil {
			return fmt.Errorf("usage log: add %s: %w", logPath, err)
		}
	}
	// Added: the offset goes back to 0 before the file goes, so a crash between the two
	// leaves an offset at most the size of a new file (never one past a file's end).
	if err := store.AddFromLog(context.Background(), nil, 0); err != nil {
		return fmt.Errorf("usage log: %w", err)
	}
	if err := os.Remove(logPath); err != nil {
		return fmt.Errorf("usage log: %w", err)
	}
	return nil
}

// Close adds what is logged and closes the log.
func (m *Meter) Close() {
	close(m.stop)
	<-m.done
	if m.log != nil {
		m.log.Close()
	}
}

// Add meters qty of a meter for an application (and its organization) this month: logged
// before it returns.
func (m *Meter) Add(orgID, appID, meter string, qty float64) {
	month := Month(m.opts.Now())
	if m.shared != nil {
		deltas := []UsageDelta{{Scope: "org:" + orgID, Month: month, Meter: meter, Quantity: qty}}
		if appID != "" {
			deltas = append(deltas, UsageDelta{Scope: "app:" + appID, Month: month, Meter: meter, Quantity: qty})
		}
		if err := m.group.append(m.shared, deltas); err != nil {
			m.opts.Logger.Error("usage metering: log append failed", "err", err)
		}
		return
	}
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
		m.opts.Logger.Error("usage metering: log write failed", "err", err)
	}
}

// Deltas are the deltas that meter qty for an organization and one of its applications: a
// change that has a transaction stores them in it.
func Deltas(orgID, appID, month, meter string, qty float64) []UsageDelta {
	return []UsageDelta{
		{Scope: "org:" + orgID, Month: month, Meter: meter, Quantity: qty},
		{Scope: "app:" + appID, Month: month, Meter: meter, Quantity: qty},
	}
}

// Flush adds what the log holds beyond what was added, then starts the log again once it is
// large and all read.
func (m *Meter) Flush() {
	m.flushMu.Lock()
	defer m.flushMu.Unlock()
	if m.shared != nil {
		m.flushShared()
		return
	}
	m.mu.Lock()
	end := m.end
	m.mu.Unlock()
	if end > m.read {
		buf := make([]byte, end-m.read)
		n, err := m.log.ReadAt(buf, m.read)
		if err != nil && n < len(buf) {
			m.opts.Logger.Error("usage metering: log read failed", "err", err)
			return
		}
		deltas, used := ParseUsageLog(buf)
		if used > 0 {
			if err := m.store.AddFromLog(context.Background(), deltas, m.read+int64(used)); err != nil {
				m.opts.Logger.Error("usage metering: write failed", "err", err) // the log keeps it for the next flush
				return
			}
			m.read += int64(used)
			m.checkCeilings(deltas)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.read == m.end && m.end >= m.opts.RotateAt {
		if err := m.log.Truncate(0); err != nil {
			m.opts.Logger.Error("usage metering: log truncate failed", "err", err)
			return
		}
		m.end = 0
		// Before this is stored, the offset exceeds the log's size, which the next start
		// reads as "started again".
		if err := m.store.AddFromLog(context.Background(), nil, 0); err != nil {
			m.opts.Logger.Error("usage metering: log offset reset failed", "err", err)
		}
		m.read = 0
	}
}

// appendGroup commits concurrent appends to a shared usage log together: a caller that finds
// no append running writes what is pending, its own deltas with those of every caller that
// arrived meanwhile, in one statement; the others wait for the append that carries theirs.
// Each caller returns once its deltas are stored (or the append failed).
type appendGroup struct {
	mu      sync.Mutex
	pending []UsageDelta
	batch   *appendBatch // the batch pending joins (nil: none yet)
	running bool
}

type appendBatch struct {
	done chan struct{}
	err  error
}

func (g *appendGroup) append(log UsageLog, deltas []UsageDelta) error {
	g.mu.Lock()
	g.pending = append(g.pending, deltas...)
	if g.batch == nil {
		g.batch = &appendBatch{done: make(chan struct{})}
	}
	mine := g.batch
	if g.running {
		g.mu.Unlock()
		<-mine.done
		return mine.err
	}
	g.running = true
	for {
		// Write batches until none is pending; ours is the first.
		b, ds := g.batch, g.pending
		g.batch, g.pending = nil, nil
		g.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		b.err = log.AppendLog(ctx, ds)
		cancel()
		close(b.done)
		g.mu.Lock()
		if g.batch == nil {
			g.running = false
			g.mu.Unlock()
			return mine.err
		}
	}
}

// flushShared moves what the store's log holds into the counters: this replica's increments
// and any other's not yet moved.
func (m *Meter) flushShared() {
	var all []UsageDelta
	for {
		applied, more, err := m.shared.ApplyLog(context.Background(), 1000)
		if err != nil {
			m.opts.Logger.Error("usage metering: write failed", "err", err) // the log keeps it for the next flush
			break
		}
		all = append(all, applied...)
		if !more {
			break
		}
	}
	m.checkCeilings(all)
}

// checkCeilings checks the ceiling of every organization deltas count usage for.
func (m *Meter) checkCeilings(deltas []UsageDelta) {
	orgs := map[string]bool{}
	for _, d := range deltas {
		if org, ok := strings.CutPrefix(d.Scope, "org:"); ok && !orgs[org] {
			orgs[org] = true
			m.checkCeiling(org)
		}
	}
}

// ParseUsageLog sums the complete lines of a piece of the usage log into deltas and says how
// many bytes they took (a last line without its newline is left for later).
func ParseUsageLog(b []byte) ([]UsageDelta, int) {
	sums := map[UsageDelta]float64{}
	var order []UsageDelta
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
		k := UsageDelta{Scope: f[0], Month: f[1], Meter: f[2]}
		if _, ok := sums[k]; !ok {
			order = append(order, k)
		}
		sums[k] += q
	}
	out := make([]UsageDelta, len(order))
	for i, k := range order {
		k.Quantity = sums[k]
		out[i] = k
	}
	return out, used
}

// Bill rates a month of an organization (or of one of its applications, appID); connected
// end users are counted from the connections.
func (m *Meter) Bill(ctx context.Context, orgID, appID, month string) (Bill, error) {
	m.Flush()
	scope := "org:" + orgID
	if appID != "" {
		scope = "app:" + appID
	}
	u, err := m.store.Counters(ctx, scope, month)
	if err != nil {
		return Bill{}, err
	}
	users, err := m.connectedUsers(ctx, orgID, appID, month)
	if err != nil {
		return Bill{}, err
	}
	u[MeterConnectedUsers] = float64(users)
	return RateMonth(month, u), nil
}

// connectedUsers counts the distinct end users with a live connection to the organization's
// applications (or one application) that was active during the month.
func (m *Meter) connectedUsers(ctx context.Context, orgID, appID, month string) (int, error) {
	apps, err := m.devs.Applications(ctx, orgID)
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
		conns, err := m.devs.ConnectionsOfApp(ctx, a.ID)
		if err != nil {
			return 0, err
		}
		for _, c := range conns {
			if c.Mode == ModeLive && c.CreatedAt.Before(end) && (c.RevokedAt == nil || c.RevokedAt.After(start)) {
				users[c.UserID] = true
			}
		}
	}
	return len(users), nil
}

// CeilingCents is an organization's ceiling (DefaultCeilingCents until one is set).
func (m *Meter) CeilingCents(ctx context.Context, orgID string) int64 {
	c, ok, err := m.store.CeilingOf(ctx, orgID)
	if err != nil || !ok {
		return DefaultCeilingCents
	}
	return c.Cents
}

// SetCeiling sets an organization's ceiling and returns the one before.
func (m *Meter) SetCeiling(ctx context.Context, orgID string, cents int64) (before int64, err error) {
	before = m.CeilingCents(ctx, orgID)
	err = m.store.SetCeiling(ctx, orgID, Ceiling{Cents: cents, UpdatedAt: m.opts.Now().UTC().Format(time.RFC3339)})
	return before, err
}

// Event types of the ceiling (the catalogue, platform/event, names them too).
const (
	ceilingApproaching = "svc.usage.ceiling_approaching"
	ceilingReached     = "svc.usage.ceiling_reached"
)

// checkCeiling tells OnCeiling the first time in a month an organization's live spend passes
// 80% of its ceiling, and the first time it reaches it (each remembered by a marker counter in
// the month's usage).
func (m *Meter) checkCeiling(orgID string) {
	ctx := context.Background()
	month := Month(m.opts.Now())
	u, err := m.store.Counters(ctx, "org:"+orgID, month)
	if err != nil || u["ceiling_notified"] > 0 {
		return
	}
	b := RateMonth(month, u)
	ceiling := m.CeilingCents(ctx, orgID)
	typ, marker := ceilingReached, "ceiling_notified"
	switch {
	case b.TotalCents >= ceiling:
	case b.TotalCents*5 >= ceiling*4 && u["ceiling_approach_notified"] == 0:
		typ, marker = ceilingApproaching, "ceiling_approach_notified"
	default:
		return
	}
	// Once per organization, month and marker, whichever replica gets here first.
	applied, err := m.store.AddOnce(ctx, "ceiling:"+orgID+":"+month+":"+marker,
		[]UsageDelta{{Scope: "org:" + orgID, Month: month, Meter: marker, Quantity: 1}})
	if err != nil || !applied {
		return
	}
	if m.opts.OnCeiling != nil {
		m.opts.OnCeiling(ctx, orgID, typ, map[string]any{"org_id": orgID, "month": month,
			"total_cents": float64(b.TotalCents), "ceiling_cents": float64(ceiling)})
	}
}

// Charge is what one meter of an execution added to the month's bill.
type Charge struct {
	Meter, Unit string
	Quantity    float64
	Cents       int64
}

// ChargeExecution meters a live execution's usage exactly once (keyed by its id): one
// execution, the bytes it moved, a month of storing the bytes it preserved; it returns each
// meter's quantity and what it added to this month's bill.
func (m *Meter) ChargeExecution(ctx context.Context, orgID, appID, executionID string, moved, preserved int64) ([]Charge, error) {
	month := Month(m.opts.Now())
	qty := map[string]float64{MeterExecutions: 1, MeterDataTransferred: float64(moved) / 1e9,
		MeterDeveloperStorage: float64(preserved) / 1e9}
	m.Flush()
	before, err := m.store.Counters(ctx, "org:"+orgID, month)
	if err != nil {
		return nil, err
	}
	var deltas []UsageDelta
	after := map[string]float64{}
	for k, v := range before {
		after[k] = v
	}
	for _, r := range RateCard {
		q, ok := qty[r.Meter]
		if !ok || q == 0 {
			continue
		}
		after[r.Meter] += q
		for _, scope := range []string{"org:" + orgID, "app:" + appID} {
			deltas = append(deltas, UsageDelta{Scope: scope, Month: month, Meter: r.Meter, Quantity: q})
		}
	}
	if _, err := m.store.AddOnce(ctx, "execution:"+executionID, deltas); err != nil {
		return nil, err
	}
	b0, b1 := RateMonth(month, before), RateMonth(month, after)
	var charges []Charge
	for i, r := range RateCard {
		q, ok := qty[r.Meter]
		if !ok || q == 0 {
			continue
		}
		charges = append(charges, Charge{Meter: r.Meter, Quantity: q, Unit: r.Unit, Cents: b1.Lines[i].Cents - b0.Lines[i].Cents})
	}
	return charges, nil
}
