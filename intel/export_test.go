package intel

import "svc.dev/svc/mail"

// QuickSkip exposes quickSkip to the black-box tests.
var QuickSkip = quickSkip

// Extracts reports whether extract keeps an observation of a document.
func Extracts(d *mail.Document) bool { return extract(d, "x", "", isFreemail) != nil }

// MayState exposes mayState.
var MayState = mayState
