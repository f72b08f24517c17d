package vault

// SetGroupsInFlight sets how many groups of a tenant may be committed at once (a group
// recorded while the next one is written), for the tests of that path, and returns the
// function that restores it. Not for use while a vault is open.
func SetGroupsInFlight(n int) (restore func()) {
	old := groupsInFlight
	groupsInFlight = n
	return func() { groupsInFlight = old }
}
