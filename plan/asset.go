package plan

import (
	"crypto/sha256"

	"github.com/oklog/ulid/v2"
)

// AssetID is the asset id of a provider object in a tenant: "ast_" and 26 characters of the
// ULID alphabet, derived from SHA-256 over the tenant, source and object ids. It is derived
// rather than random so that the same object planned twice is the same asset (its manifest
// follows it across plans and executions) and a plan's hash does not depend on when it was
// built. Unlike made ids, derived asset ids do not sort by time.
func AssetID(tenantID, sourceID, objectID string) string {
	h := sha256.New()
	for _, s := range []string{"svc/asset/v1", tenantID, sourceID, objectID} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	var u ulid.ULID
	copy(u[:], h.Sum(nil))
	return "ast_" + u.String()
}
