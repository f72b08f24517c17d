package simulated

import "time"

// BillingKey is the metadata key of a billing message's index.
const BillingKey = billingKey

// BillingMessages is how many billing, trial and payout messages a mailbox of epoch holds.
func BillingMessages(epoch time.Time) int { return len(billingMail(epoch)) }
