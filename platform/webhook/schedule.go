package webhook

import "time"

// The retry schedule (spec "Webhook delivery" rule 7): after a failed attempt wait 1m, 5m,
// 30m, 2h, 6h, then 12h each time, as long as the next attempt falls within RetrySpan of the
// first attempt; when it would not, the failed attempt was the last and the delivery is dead.
var retryDelays = [...]time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 6 * time.Hour}

const (
	// RetryEvery is the wait between attempts once the first five retries are spent.
	RetryEvery = 12 * time.Hour
	// RetrySpan is how long after its first attempt a delivery is retried.
	RetrySpan = 72 * time.Hour
)

// RetryDelay is the wait after the n-th failed attempt (n from 1).
func RetryDelay(n int) time.Duration {
	if n >= 1 && n <= len(retryDelays) {
		return retryDelays[n-1]
	}
	return RetryEvery
}

// NextAttempt returns when to try again after the n-th attempt (n from 1), made at at, failed,
// for a delivery first attempted at first. ok is false when the delivery is dead.
//
// Delays count from the start of the failed attempt, so with a prompt engine the attempts are
// at 0, 1m, 6m, 36m, 2h36m, 8h36m, 20h36m, 32h36m, 44h36m, 56h36m and 68h36m after the first:
// eleven attempts, the delivery dying when the last one fails. If the engine was down when an
// attempt was due, the attempt is made when it is back, even after the span (one last chance).
func NextAttempt(first, at time.Time, n int) (next time.Time, ok bool) {
	next = at.Add(RetryDelay(n))
	if next.After(first.Add(RetrySpan)) {
		return time.Time{}, false
	}
	return next, true
}
