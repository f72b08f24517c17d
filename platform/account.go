package platform

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"svc.dev/svc/id"
)

// User is an end-user account.
type User struct {
	ID           string    `json:"id"`
	Email        string    `json:"email"`
	DisplayName  *string   `json:"display_name,omitempty"`
	Locale       string    `json:"locale"`
	Status       string    `json:"status"`
	Plan         string    `json:"plan"`
	PasswordHash string    `json:"password_hash"`
	CreatedAt    time.Time `json:"created_at"`
	OrgIDs       []string  `json:"org_ids,omitempty"`
	// DeletionJobID is the queued deletion job while the account is deleting.
	DeletionJobID string `json:"deletion_job_id,omitempty"`
	// DeletionDueAt is when the grace period ends and the deletion job runs.
	DeletionDueAt *time.Time `json:"deletion_due_at,omitempty"`
}

// Account statuses.
const (
	StatusActive   = "active"
	StatusDeleting = "deleting"
)

// ErrDeleting is returned when an account that is being deleted is asked to do what only an
// active account may.
var ErrDeleting = errors.New("account is being deleted")

// Session is a signed-in browser session. Only the hash of its token is stored.
type Session struct {
	TokenHash string    `json:"token_hash"`
	UserID    string    `json:"user_id"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Org is a developer organization.
type Org struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Status    string    `json:"status"`
	OwnerID   string    `json:"owner_id"`
	CreatedAt time.Time `json:"created_at"`
}

// AccountStore keeps users, sessions and organizations.
type AccountStore interface {
	// CreateUser stores a new user; ErrEmailTaken if another user has the same
	// (case-insensitive) email.
	CreateUser(ctx context.Context, u *User) error
	// User returns a user by id, or ErrNotFound.
	User(ctx context.Context, id string) (*User, error)
	// UserByEmail returns a user by case-insensitive email, or ErrNotFound.
	UserByEmail(ctx context.Context, email string) (*User, error)
	// UpdateUser applies fn to the stored user atomically and stores the result.
	UpdateUser(ctx context.Context, id string, fn func(*User) error) (*User, error)
	// CreateSession stores a session.
	CreateSession(ctx context.Context, s *Session) error
	// Session returns a session by token hash, or ErrNotFound.
	Session(ctx context.Context, tokenHash string) (*Session, error)
	// DeleteSession removes a session; deleting a missing one is not an error.
	DeleteSession(ctx context.Context, tokenHash string) error
	// CreateOrg stores an organization and adds it to its owner's org ids, atomically.
	CreateOrg(ctx context.Context, o *Org) error
	// Org returns an organization by id, or ErrNotFound.
	Org(ctx context.Context, id string) (*Org, error)
}

// SessionCookie is the name of the end-user session cookie.
const SessionCookie = "svc_session"

// Accounts signs end users up and in and manages their accounts and organizations.
type Accounts struct {
	store      AccountStore
	params     PasswordParams
	now        func() time.Time
	sessionTTL time.Duration
	dummyHash  string
}

// AccountsOptions configure Accounts; zero fields take defaults.
type AccountsOptions struct {
	Password   PasswordParams   // default DefaultPasswordParams
	Now        func() time.Time // default time.Now
	SessionTTL time.Duration    // default 14 days
}

// NewAccounts returns an account service over s.
func NewAccounts(s AccountStore, opts *AccountsOptions) *Accounts {
	a := &Accounts{store: s, params: DefaultPasswordParams, now: time.Now, sessionTTL: 14 * 24 * time.Hour}
	if opts != nil {
		if opts.Password.Memory != 0 {
			a.params = opts.Password
		}
		if opts.Now != nil {
			a.now = opts.Now
		}
		if opts.SessionTTL != 0 {
			a.sessionTTL = opts.SessionTTL
		}
	}
	// Signing in to an unknown email still costs one hash, so timing does not reveal which
	// emails have accounts.
	a.dummyHash, _ = HashPassword("not a password", a.params)
	return a
}

// SignUp creates an account and a session for it, returning the session token.
func (a *Accounts) SignUp(ctx context.Context, email, password string, displayName *string, locale string) (*User, string, error) {
	hash, err := HashPassword(password, a.params)
	if err != nil {
		return nil, "", err
	}
	if locale == "" {
		locale = "en"
	}
	u := &User{
		ID:           id.New("usr"),
		Email:        strings.TrimSpace(email),
		DisplayName:  displayName,
		Locale:       locale,
		Status:       StatusActive,
		Plan:         "free",
		PasswordHash: hash,
		CreatedAt:    a.now().UTC().Truncate(time.Millisecond),
	}
	if err := a.store.CreateUser(ctx, u); err != nil {
		return nil, "", fmt.Errorf("create user: %w", err)
	}
	token, err := a.startSession(ctx, u.ID)
	if err != nil {
		return nil, "", err
	}
	return u, token, nil
}

// SignIn checks an email and password and starts a session, returning its token.
func (a *Accounts) SignIn(ctx context.Context, email, password string) (*User, string, error) {
	u, err := a.store.UserByEmail(ctx, strings.TrimSpace(email))
	if errors.Is(err, ErrNotFound) {
		CheckPassword(a.dummyHash, password)
		return nil, "", ErrInvalidCredentials
	}
	if err != nil {
		return nil, "", fmt.Errorf("find user: %w", err)
	}
	if !CheckPassword(u.PasswordHash, password) {
		return nil, "", ErrInvalidCredentials
	}
	token, err := a.startSession(ctx, u.ID)
	if err != nil {
		return nil, "", err
	}
	return u, token, nil
}

func (a *Accounts) startSession(ctx context.Context, userID string) (string, error) {
	token, err := NewToken("ses_", 43)
	if err != nil {
		return "", err
	}
	now := a.now().UTC()
	s := &Session{TokenHash: HashToken(token), UserID: userID, CreatedAt: now, ExpiresAt: now.Add(a.sessionTTL)}
	if err := a.store.CreateSession(ctx, s); err != nil {
		return "", fmt.Errorf("create session: %w", err)
	}
	return token, nil
}

// SessionTTL is how long a new session lasts.
func (a *Accounts) SessionTTL() time.Duration { return a.sessionTTL }

// Authenticate returns the user of a live session token, or ErrUnauthenticated.
func (a *Accounts) Authenticate(ctx context.Context, token string) (*User, error) {
	if token == "" {
		return nil, ErrUnauthenticated
	}
	s, err := a.store.Session(ctx, HashToken(token))
	if errors.Is(err, ErrNotFound) {
		return nil, ErrUnauthenticated
	}
	if err != nil {
		return nil, fmt.Errorf("find session: %w", err)
	}
	if !a.now().Before(s.ExpiresAt) {
		return nil, ErrUnauthenticated
	}
	u, err := a.store.User(ctx, s.UserID)
	if errors.Is(err, ErrNotFound) {
		return nil, ErrUnauthenticated
	}
	return u, err
}

// SignOut ends the session with the given token.
func (a *Accounts) SignOut(ctx context.Context, token string) error {
	return a.store.DeleteSession(ctx, HashToken(token))
}

// User returns the user with the given id.
func (a *Accounts) User(ctx context.Context, id string) (*User, error) {
	return a.store.User(ctx, id)
}

// AccountChange is a partial update of an account; nil fields are left alone, and an empty
// display name clears it.
type AccountChange struct {
	DisplayName *string
	Locale      *string
}

// Update applies a change to a user's account.
func (a *Accounts) Update(ctx context.Context, userID string, c AccountChange) (*User, error) {
	return a.store.UpdateUser(ctx, userID, func(u *User) error {
		if c.DisplayName != nil {
			if *c.DisplayName == "" {
				u.DisplayName = nil
			} else {
				name := *c.DisplayName
				u.DisplayName = &name
			}
		}
		if c.Locale != nil {
			u.Locale = *c.Locale
		}
		return nil
	})
}

// CreateOrg creates a developer organization owned by the user.
func (a *Accounts) CreateOrg(ctx context.Context, ownerID, name string) (*Org, error) {
	o := &Org{
		ID:        id.New("org"),
		Name:      name,
		Status:    "active",
		OwnerID:   ownerID,
		CreatedAt: a.now().UTC().Truncate(time.Millisecond),
	}
	if err := a.store.CreateOrg(ctx, o); err != nil {
		return nil, fmt.Errorf("create org: %w", err)
	}
	return o, nil
}

// Org returns an organization by id, or ErrNotFound.
func (a *Accounts) Org(ctx context.Context, id string) (*Org, error) {
	return a.store.Org(ctx, id)
}

// ScheduleDeletion marks an account deleting, its deletion job due at due. An account already
// deleting keeps its job and date, which are returned (the request is answered the same way).
func (a *Accounts) ScheduleDeletion(ctx context.Context, userID, jobID string, due time.Time) (*User, error) {
	return a.store.UpdateUser(ctx, userID, func(u *User) error {
		if u.Status == StatusDeleting && u.DeletionJobID != "" {
			return nil
		}
		due := due.UTC()
		u.Status, u.DeletionJobID, u.DeletionDueAt = StatusDeleting, jobID, &due
		return nil
	})
}

// KeepAccount ends a scheduled deletion (its job was cancelled): the account is active again.
// A deletion job other than the scheduled one changes nothing.
func (a *Accounts) KeepAccount(ctx context.Context, userID, jobID string) (*User, error) {
	return a.store.UpdateUser(ctx, userID, func(u *User) error {
		if u.DeletionJobID != jobID {
			return nil
		}
		u.Status, u.DeletionJobID, u.DeletionDueAt = StatusActive, "", nil
		return nil
	})
}
