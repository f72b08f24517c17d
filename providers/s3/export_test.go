package s3

import "time"

// SetTmpMaxAge lets the tests treat fresh temporary uploads as leftovers.
func SetTmpMaxAge(d time.Duration) (restore func()) {
	old := tmpMaxAge
	tmpMaxAge = d
	return func() { tmpMaxAge = old }
}
