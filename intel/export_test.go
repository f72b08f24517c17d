package intel

// QuickSkip exposes quickSkip to the black-box tests.
var QuickSkip = quickSkip
