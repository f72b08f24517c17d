package platformapi

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/server/internal/page"
	"svc.dev/svc/server/internal/rpc"
)

// portalPageTTL is how long a portal page URL served without a payment processor stays valid,
// like a processor's portal session.
const portalPageTTL = 15 * time.Minute

// portalOrg is the organization a portal request is about: the key's own; for a session, the
// one named, or the user's only one.
func portalOrg(c *rpc.Caller, orgID *string) (string, error) {
	if c.Key != nil || orgID != nil {
		return usageOrg(c, orgID)
	}
	switch len(c.User.OrgIDs) {
	case 0:
		return "", rpc.NewProblem(http.StatusNotFound, rpc.CodeNotFound, "You belong to no developer organization; there is nothing to bill.")
	case 1:
		return c.User.OrgIDs[0], nil
	}
	return "", rpc.Invalid("org_id", "is required when you belong to several organizations")
}

// createPortalSession opens the billing portal (spec #13): a customer-portal session at the
// payment processor when one is configured, else svc's own portal page (a signed URL that
// expires like a portal session).
func (a *API) createPortalSession(ctx context.Context, req *svcv1.CreatePortalSessionRequest) (*svcv1.PortalSession, error) {
	c := rpc.From(ctx)
	if err := billingAccess(c, true); err != nil {
		return nil, err
	}
	orgID, err := portalOrg(c, req.OrgId)
	if err != nil {
		return nil, err
	}
	base := a.PublicBase(rpc.HTTPRequest(ctx))
	if a.Biller == nil {
		until := a.Now().Add(portalPageTTL).Unix()
		q := url.Values{"org": {orgID}, "expires": {strconv.FormatInt(until, 10)}, "sig": {a.portalSig(orgID, until)}}
		return &svcv1.PortalSession{Url: base + "/v1/billing/portal/page?" + q.Encode()}, nil
	}
	cus, err := a.Accounts.Customer(ctx, orgID)
	if err != nil {
		return nil, err
	}
	u, err := a.Biller.PortalURL(ctx, cus, base+"/")
	if err != nil {
		a.Log.ErrorContext(ctx, "billing portal", "org_id", orgID, "err", err)
		return nil, rpc.NewProblem(http.StatusBadGateway, rpc.CodeInternal, "The payment processor did not open a portal session; try again.")
	}
	return &svcv1.PortalSession{Url: u}, nil
}

func (a *API) portalSig(orgID string, expires int64) string {
	m := hmac.New(sha256.New, a.PortalKey)
	m.Write([]byte("svc/billing-portal/v1\x00" + orgID + "\x00" + strconv.FormatInt(expires, 10)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// servePortalPage renders svc's own billing portal for a signed, unexpired URL: the plan, this
// month's usage and rated lines, the ceiling, and past months. Static HTML: every value is
// escaped by html/template, no script runs (the Content-Security-Policy allows none).
func (a *API) servePortalPage(w http.ResponseWriter, r *http.Request) {
	if !a.RateHeaders(w, r) {
		return
	}
	rid := rpc.RequestID(r.Context())
	q := r.URL.Query()
	orgID := q.Get("org")
	expires, err := strconv.ParseInt(q.Get("expires"), 10, 64)
	if err != nil || !hmac.Equal([]byte(q.Get("sig")), []byte(a.portalSig(orgID, expires))) || !a.Now().Before(time.Unix(expires, 0)) {
		rpc.Write(w, rid, rpc.NewProblem(http.StatusForbidden, rpc.CodeForbidden, "The portal link is not valid or has expired; open the portal again."))
		return
	}
	ctx := r.Context()
	org, err := a.Accounts.Org(ctx, orgID)
	if err != nil {
		rpc.Write(w, rid, rpc.FromError(err))
		return
	}
	st, err := a.Meter.Statement(ctx, orgID, portalMonths)
	if err != nil {
		rpc.Write(w, rid, rpc.FromError(err))
		return
	}
	page.Portal(w, a.Log, org.Name, st)
}

// portalMonths is how many past months the portal page lists.
const portalMonths = 12
