package connectflow

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/oauth2"
	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/providers"
	"svc.dev/svc/server/internal/page"
	"svc.dev/svc/server/internal/rpc"
)

// The consent page: plain server-rendered HTML, no script. Every form posts back to the page;
// the POSTs are authenticated by the session cookie and protected against CSRF twice: the
// browser's fetch metadata and Origin (http.CrossOriginProtection) and a token in a hidden
// field bound to the connect session and to the browser session.

// Mount mounts the consent page and its forms on mux.
func (f *Flow) Mount(mux *http.ServeMux) {
	mux.HandleFunc("GET /connect/{id}", f.consentPage)
	mux.HandleFunc("POST /connect/{id}", f.consentDecision)
	mux.HandleFunc("POST /connect/{id}/sign-in", f.consentSignIn)
	mux.HandleFunc("POST /connect/{id}/provider", f.consentProvider)
}

// consentRequest is what every consent handler starts from.
type consentRequest struct {
	csn   *platform.ConnectSession
	app   *platform.Application
	user  *platform.User // nil when not signed in
	token string         // the session token
}

// begin loads the connect session, its application and the signed-in user (if any), after
// the rate limit. It writes the error page itself and returns nil when there is nothing more
// to do.
func (f *Flow) begin(w http.ResponseWriter, r *http.Request) *consentRequest {
	if !f.cfg.Edge.RateLimit(w, r) {
		return nil
	}
	csnID := r.PathValue("id")
	csn, err := f.cfg.Sessions.Session(r.Context(), csnID)
	if err == nil {
		app := ownApp // a user's own provider authorization has no application
		if !csn.Own() {
			app, err = f.cfg.Developers.Application(r.Context(), csn.AppID)
		}
		if err == nil {
			cr := &consentRequest{csn: csn, app: app}
			if tok := sessionToken(r); tok != "" {
				if u, err := f.cfg.Accounts.Authenticate(r.Context(), tok); err == nil {
					cr.user, cr.token = u, tok
				}
			}
			if csn.Own() && cr.user != nil && cr.user.ID != csn.UserID {
				err = platform.ErrNotFound // another user's: as if it did not exist
			} else {
				return cr
			}
		}
	}
	if errors.Is(err, platform.ErrNotFound) {
		page.Message(w, f.log, http.StatusNotFound, "Request not found", "This connect request does not exist. Go back to the application and start again.")
		return nil
	}
	f.log.ErrorContext(r.Context(), "consent page", "request_id", rpc.RequestID(r.Context()), "err", err)
	page.Message(w, f.log, http.StatusInternalServerError, "Something went wrong", "The request could not be loaded. Try again in a moment.")
	return nil
}

// checkPost applies the CSRF defences and the session to a form POST. With needToken, the
// form's csrf_token must be the consent token of this browser session.
func (f *Flow) checkPost(w http.ResponseWriter, r *http.Request, cr *consentRequest, needToken bool) bool {
	if err := f.cfg.Edge.CheckOrigin(r); err != nil {
		page.Message(w, f.log, http.StatusForbidden, "Request refused", "This form was sent from another site, so it was refused. Open the connect link again and decide there.")
		return false
	}
	if err := r.ParseForm(); err != nil {
		page.Message(w, f.log, http.StatusBadRequest, "Request refused", "The form could not be read.")
		return false
	}
	if !needToken {
		return true
	}
	if cr.user == nil {
		f.signInPage(w, r, cr, http.StatusUnauthorized, "Your session ended. Sign in again to continue.")
		return false
	}
	if !cr.csn.CheckConsentToken(cr.token, r.PostForm.Get("csrf_token")) {
		page.Message(w, f.log, http.StatusForbidden, "Request refused", "This form is out of date or did not come from this page. Open the connect link again.")
		return false
	}
	return true
}

// decided shows a connect session that can no longer be decided; it reports whether it did.
func (f *Flow) decided(w http.ResponseWriter, cr *consentRequest) bool {
	if cr.csn.Own() {
		return f.ownDecided(w, cr)
	}
	switch cr.csn.Status {
	case platform.ConnectPending:
		return false
	case platform.ConnectExpired:
		page.Message(w, f.log, http.StatusGone, "This request has expired", "Connect requests are valid for 30 minutes. Go back to "+cr.app.Name+" and start again.")
	case platform.ConnectApproved:
		page.Message(w, f.log, http.StatusConflict, "Already approved", "You approved this request. You can revoke "+cr.app.Name+"'s access at any time.")
	default:
		page.Message(w, f.log, http.StatusConflict, "Already denied", "This request was denied. Nothing was shared with "+cr.app.Name+".")
	}
	return true
}

func (f *Flow) consentPage(w http.ResponseWriter, r *http.Request) {
	cr := f.begin(w, r)
	if cr == nil || f.decided(w, cr) {
		return
	}
	if cr.user == nil {
		f.signInPage(w, r, cr, http.StatusOK, "")
		return
	}
	if cr.csn.Own() {
		f.ownPage(w, r, cr)
		return
	}
	v, err := f.consentView(r.Context(), cr)
	if err != nil {
		f.log.ErrorContext(r.Context(), "consent page", "request_id", rpc.RequestID(r.Context()), "err", err)
		page.Message(w, f.log, http.StatusInternalServerError, "Something went wrong", "The request could not be loaded. Try again in a moment.")
		return
	}
	q := r.URL.Query()
	if id := q.Get("connected"); id != "" && slices.Contains(cr.csn.ConnectedSourceIDs, id) {
		v.Notice = "Your " + v.Provider + " account is connected. It is ticked below."
	}
	if code := q.Get("provider_error"); code != "" {
		v.Error = v.Provider + " did not connect (" + errorCode(code) + "). You can try again, or go on without it."
	}
	f.consentHeaders(w, cr)
	page.Render(w, f.log, http.StatusOK, "consent", v)
}

func (f *Flow) consentHeaders(w http.ResponseWriter, cr *consentRequest) {
	var targets []string
	if !cr.csn.Own() {
		targets = append(targets, cr.csn.RedirectURI)
	}
	if p, ok := f.oauthProvider(providers.Name(cr.csn.Provider)); ok {
		targets = append(targets, p.AuthURL)
	}
	page.Headers(w, targets...)
}

// consentView gathers what the consent page shows: the application, the operation classes in
// plain words, and the user's sources in the session's mode.
func (f *Flow) consentView(ctx context.Context, cr *consentRequest) (*page.View, error) {
	csn := cr.csn
	v := &page.View{Title: "Connect " + cr.app.Name, App: cr.app.Name, Action: consentPath(csn.ID), Token: csn.ConsentToken(cr.token),
		User: cr.user.Email, Test: csn.Mode == platform.ModeTest, Expires: csn.ExpiresAt.UTC().Format("15:04 UTC")}
	for _, op := range csn.OperationClasses {
		w, ok := page.OpWords[op]
		if !ok {
			w = [2]string{op, op}
		}
		v.Ops = append(v.Ops, page.Op{Title: w[0], Words: w[1]})
		v.Destructive = v.Destructive || op == "remove" || op == "migrate"
	}
	v.Connected = len(csn.ConnectedSourceIDs) > 0
	if csn.Provider != "" {
		v.Provider = f.providerLabel(providers.Name(csn.Provider))
	}
	tenant := platform.Tenant{Owner: cr.user.ID, Mode: csn.Mode}
	err := f.cfg.Sources.Scan(ctx, tenant.String(), func(src *svcv1.Source) bool {
		fresh := slices.Contains(csn.ConnectedSourceIDs, src.Id)
		if src.GetStatus() != svcv1.SourceStatus_SOURCE_STATUS_CONNECTED || (len(csn.SourceIDs) > 0 && !slices.Contains(csn.SourceIDs, src.Id) && !fresh) {
			return true
		}
		detail := f.providerLabel(providers.Name(rpc.EnumWire(src.GetProvider())))
		if src.Email != nil && !strings.Contains(src.DisplayName, src.GetEmail()) {
			detail += " · " + src.GetEmail()
		}
		v.Sources = append(v.Sources, page.Source{ID: src.Id, Name: src.DisplayName, Detail: detail,
			Checked: fresh || slices.Contains(csn.SourceIDs, src.Id)})
		return true
	})
	return v, err
}

func (f *Flow) signInPage(w http.ResponseWriter, r *http.Request, cr *consentRequest, status int, errText string) {
	page.Headers(w)
	v := &page.View{Title: "Sign in", App: cr.app.Name, Action: consentPath(cr.csn.ID), Error: errText, Own: cr.csn.Own()}
	if r.Method == http.MethodPost {
		v.Email = r.PostForm.Get("email")
	}
	page.Render(w, f.log, status, "signin", v)
}

// consentSignIn signs the user in from the consent page and comes back to it. It is the same
// sign-in as POST /v1/auth/sign-in, with the same cookie.
func (f *Flow) consentSignIn(w http.ResponseWriter, r *http.Request) {
	cr := f.begin(w, r)
	if cr == nil || !f.checkPost(w, r, cr, false) || f.decided(w, cr) {
		return
	}
	_, token, err := f.cfg.Accounts.SignIn(r.Context(), r.PostForm.Get("email"), r.PostForm.Get("password"))
	if errors.Is(err, platform.ErrInvalidCredentials) {
		f.signInPage(w, r, cr, http.StatusUnauthorized, "The email or password is not correct.")
		return
	}
	if err != nil {
		f.log.ErrorContext(r.Context(), "consent sign-in", "request_id", rpc.RequestID(r.Context()), "err", err)
		page.Message(w, f.log, http.StatusInternalServerError, "Something went wrong", "You could not be signed in. Try again in a moment.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: platform.SessionCookie, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: f.cfg.Edge.SecureCookies(r), MaxAge: int(f.cfg.Accounts.SessionTTL().Seconds())})
	page.Headers(w)
	http.Redirect(w, r, consentPath(cr.csn.ID), http.StatusSeeOther)
}

// consentDecision records Approve or Deny and sends the browser back to the application.
func (f *Flow) consentDecision(w http.ResponseWriter, r *http.Request) {
	cr := f.begin(w, r)
	if cr == nil || !f.checkPost(w, r, cr, true) || f.decided(w, cr) {
		return
	}
	if cr.csn.Own() {
		page.Message(w, f.log, http.StatusBadRequest, "Request refused", "There is nothing to approve here: connect the account with the button on this page.")
		return
	}
	ctx := f.pageCaller(r, cr)
	flow := f.cfg.Sessions
	switch r.PostForm.Get("decision") {
	case "deny":
		csn, err := flow.Deny(ctx, cr.csn.ID, cr.user.ID)
		if err != nil {
			f.decisionFailed(w, r, cr, err)
			return
		}
		f.cfg.Audit.Change(ctx, csn.AppID, "connect_session.denied", csn.ID, map[string]any{"user_id": cr.user.ID})
		f.backToApp(w, r, csn, url.Values{"error": {"access_denied"}})
	case "approve":
		chosen := slices.Compact(slices.Sorted(slices.Values(r.PostForm["source_id"])))
		tenant := platform.Tenant{Owner: cr.user.ID, Mode: cr.csn.Mode}
		for _, id := range chosen {
			src, err := f.cfg.Sources.Get(ctx, tenant.String(), id)
			if err != nil || src.GetStatus() != svcv1.SourceStatus_SOURCE_STATUS_CONNECTED {
				page.Message(w, f.log, http.StatusBadRequest, "Request refused", "One of the sources chosen is not one of your connected sources.")
				return
			}
		}
		csn, conn, err := flow.Approve(ctx, cr.csn.ID, cr.user.ID, chosen)
		if errors.Is(err, platform.ErrNoSources) {
			f.consentError(w, r, cr, http.StatusUnprocessableEntity, "Choose at least one source that "+cr.app.Name+" may use.")
			return
		}
		if err != nil {
			f.decisionFailed(w, r, cr, err)
			return
		}
		// Sources connected during this consent came through the new connection.
		for _, id := range csn.ConnectedSourceIDs {
			err := f.cfg.Sources.Update(ctx, tenant.String(), id, func(src *svcv1.Source) error {
				src.ConnectionId, src.ConnectedViaApplicationId = proto.String(conn.ID), proto.String(conn.AppID)
				return nil
			})
			if err != nil {
				f.log.ErrorContext(ctx, "record source connection", "source_id", id, "err", err)
			}
		}
		f.cfg.Audit.Change(ctx, conn.AppID, "connection.created", conn.ID, map[string]any{"user_id": conn.UserID, "mode": string(conn.Mode),
			"operation_classes": rpc.Strings(conn.Grant.OperationClasses), "source_ids": rpc.Strings(conn.Grant.SourceIDs), "connect_session_id": csn.ID})
		f.cfg.Edge.Emit(ctx, conn.Tenant(), event.ConnectionCreated, "/v1/connections", conn.ID, map[string]any{
			"connection_id": conn.ID, "application_id": conn.AppID, "connect_session_id": csn.ID,
			"operation_classes": rpc.Strings(conn.Grant.OperationClasses), "source_ids": rpc.Strings(conn.Grant.SourceIDs)})
		f.backToApp(w, r, csn, url.Values{"connection_id": {conn.ID}})
	default:
		page.Message(w, f.log, http.StatusBadRequest, "Request refused", "Choose Approve or Deny.")
	}
}

// pageCaller puts the signed-in user in the request's context as its Caller, so that events
// and audit entries name them as they do for API calls.
func (f *Flow) pageCaller(r *http.Request, cr *consentRequest) context.Context {
	return rpc.WithCaller(r.Context(), &rpc.Caller{RequestID: rpc.RequestID(r.Context()), User: cr.user, SessionToken: cr.token,
		Tenant: platform.Tenant{Owner: cr.user.ID, Mode: cr.csn.Mode}, Header: http.Header{}})
}

func (f *Flow) consentError(w http.ResponseWriter, r *http.Request, cr *consentRequest, status int, text string) {
	v, err := f.consentView(r.Context(), cr)
	if err != nil {
		page.Message(w, f.log, status, "Request refused", text)
		return
	}
	v.Error = text
	f.consentHeaders(w, cr)
	page.Render(w, f.log, status, "consent", v)
}

func (f *Flow) decisionFailed(w http.ResponseWriter, r *http.Request, cr *consentRequest, err error) {
	switch {
	case errors.Is(err, platform.ErrConnectExpired):
		cr.csn.Status = platform.ConnectExpired
		f.decided(w, cr)
	case errors.Is(err, platform.ErrConnectDecided):
		if csn, err := f.cfg.Sessions.Session(r.Context(), cr.csn.ID); err == nil {
			cr.csn = csn
		}
		if !f.decided(w, cr) {
			page.Message(w, f.log, http.StatusConflict, "Already decided", "This request was already decided.")
		}
	case errors.Is(err, platform.ErrScope):
		page.Message(w, f.log, http.StatusForbidden, "Request refused", cr.app.Name+" is no longer allowed what it asked for. Go back to it and start again.")
	default:
		f.log.ErrorContext(r.Context(), "consent decision", "request_id", rpc.RequestID(r.Context()), "err", err)
		page.Message(w, f.log, http.StatusInternalServerError, "Something went wrong", "Your decision could not be recorded. Try again in a moment.")
	}
}

// backToApp sends the browser to the application's redirect URI with the outcome and the
// application's state.
func (f *Flow) backToApp(w http.ResponseWriter, r *http.Request, csn *platform.ConnectSession, q url.Values) {
	u, err := url.Parse(csn.RedirectURI)
	if err != nil {
		page.Message(w, f.log, http.StatusInternalServerError, "Something went wrong", "The application's return address is not valid.")
		return
	}
	all := u.Query()
	for k, v := range q {
		all[k] = v
	}
	if csn.State != "" {
		all.Set("state", csn.State)
	}
	u.RawQuery = all.Encode()
	page.Headers(w, csn.RedirectURI)
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

// consentProvider starts the provider authorization for the provider the application asked
// the user to connect: a state bound to this browser session and connect session (stored
// server side, single use, 10 minutes) and a PKCE S256 challenge.
func (f *Flow) consentProvider(w http.ResponseWriter, r *http.Request) {
	cr := f.begin(w, r)
	if cr == nil || !f.checkPost(w, r, cr, true) || f.decided(w, cr) {
		return
	}
	name := providers.Name(cr.csn.Provider)
	p, ok := f.oauthProvider(name)
	if !ok {
		f.consentError(w, r, cr, http.StatusBadRequest, "This request does not ask you to connect a provider.")
		return
	}
	verifier := oauth2.GenerateVerifier()
	redirectURL := f.cfg.Edge.PublicBase(r) + "/v1/connect/" + string(name) + "/callback"
	state, err := f.cfg.Sessions.BeginOAuth(r.Context(), platform.OAuthStart{SessionToken: cr.token, UserID: cr.user.ID,
		ConnectSessionID: cr.csn.ID, Provider: string(name), Verifier: verifier, RedirectURL: redirectURL})
	if err != nil {
		f.log.ErrorContext(r.Context(), "begin oauth", "request_id", rpc.RequestID(r.Context()), "err", err)
		page.Message(w, f.log, http.StatusInternalServerError, "Something went wrong", "The connection could not be started. Try again in a moment.")
		return
	}
	page.Headers(w, p.AuthURL)
	http.Redirect(w, r, p.AuthCodeURL(name, redirectURL, state, verifier), http.StatusSeeOther)
}
