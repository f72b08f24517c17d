package platform

// Mode is a credential's mode: test keys reach an isolated, simulated, unbilled tenant; live
// keys reach real data and are metered.
type Mode string

// The two modes.
const (
	ModeTest Mode = "test"
	ModeLive Mode = "live"
)

// Tenant is the unit of isolation: everything stored belongs to exactly one tenant, and an id
// of another tenant is not found. Owner is the end user (usr_) whose content it is, or the
// organization (org_) for a developer's own records; the same owner has separate test and live
// tenants.
type Tenant struct {
	Owner string
	Mode  Mode
}

// String is the tenant's storage key ("live:usr_01...").
func (t Tenant) String() string { return string(t.Mode) + ":" + t.Owner }

// Simulated reports whether the tenant holds test-mode (simulated, unbilled) data.
func (t Tenant) Simulated() bool { return t.Mode == ModeTest }
