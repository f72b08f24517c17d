package pgsearch

import "time"

// SetStatementTimeout sets the database's bound on a search's statements, until the returned
// function restores it.
func SetStatementTimeout(d time.Duration) (restore func()) {
	old := statementTimeout
	statementTimeout = d
	return func() { statementTimeout = old }
}
