package vault

// SetGroupsInFlight sets how many groups of a tenant may be committed at once (a group
// recorded while the next one is written), for the tests of that path, and returns the
// function that restores it. Not for use while a vault is open.
func SetGroupsInFlight(n int) (restore func()) {
	old := groupsInFlight
	groupsInFlight = n
	return func() { groupsInFlight = old }
}

// SetLegacyFormat makes v write the seal formats of before bound streams (versions 1 and
// 2) and read without holding back the final segment (on) or not: the old path, for the
// benchmarks that compare the two and the tests that read old data. Call it before any
// write.
func SetLegacyFormat(v *Vault, on bool) { v.legacy = on }
