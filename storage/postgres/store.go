package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"google.golang.org/protobuf/proto"

	"svc.dev/svc/storage"
	"svc.dev/svc/storage/postgres/pgsearch"
	"svc.dev/svc/vault/search"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is the PostgreSQL implementation of the storage seam (storage.Store).
type Store struct {
	pool *pgxpool.Pool
}

var _ storage.Store = (*Store)(nil)

// defaultMaxConns is the pool's size unless the DSN sets pool_max_conns.
const defaultMaxConns = 16

// Open connects to the database named by dsn (a postgres:// URL or key=value string), brings
// its schema up to date, and returns the store; Close releases its connections.
func Open(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	// pgxpool's default is max(4, cores) connections, which a server's concurrent executions,
	// deliveries and requests outgrow on a small machine; pool_max_conns in the DSN still wins.
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = max(cfg.MaxConns, defaultMaxConns)
	}
	if err := migrate(ctx, cfg.ConnConfig); err != nil {
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	return &Store{pool: pool}, nil
}

// migrate applies the embedded migrations that the database lacks, holding goose's
// PostgreSQL session lock so that processes opening the database at once apply each once.
func migrate(ctx context.Context, cc *pgx.ConnConfig) error {
	db := stdlib.OpenDB(*cc.Copy())
	defer db.Close()
	files, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, files, goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	return nil
}

// SchemaVersion returns the version of the newest migration applied to the database.
func (s *Store) SchemaVersion(ctx context.Context) (int64, error) {
	db := stdlib.OpenDBFromPool(s.pool)
	defer db.Close()
	return schemaVersion(ctx, db)
}

func schemaVersion(ctx context.Context, db *sql.DB) (int64, error) {
	files, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return 0, err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, files, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return 0, err
	}
	return p.GetDBVersion(ctx)
}

// SearchIndex returns the vault's search index kept in this database (pgsearch: PostgreSQL
// full-text search, shared by every process on the database), on the store's connections.
func (s *Store) SearchIndex(opts *search.Options) *pgsearch.Index { return pgsearch.New(s.pool, opts) }

// Close releases the store's connections.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// querier is what both the pool and a transaction offer.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// errRetry asks inTx to run its function again in a new transaction (another transaction
// inserted the row this one meant to create).
var errRetry = errors.New("retry the transaction")

// maxAttempts bounds how often a transaction is retried.
const maxAttempts = 20

// inTx runs fn in a read-write transaction and commits it, running it again when
// PostgreSQL reports a serialization failure or a deadlock, or fn asks to (errRetry).
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return s.inTxWith(ctx, pgx.TxOptions{}, fn)
}

func (s *Store) inTxWith(ctx context.Context, opts pgx.TxOptions, fn func(pgx.Tx) error) error {
	var err error
	for range maxAttempts {
		err = pgx.BeginTxFunc(ctx, s.pool, opts, fn)
		if !retryable(err) {
			return err
		}
	}
	return fmt.Errorf("after %d attempts: %w", maxAttempts, err)
}

func retryable(err error) bool {
	if errors.Is(err, errRetry) {
		return true
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// write is a storage.Write of this store: a statement run in the transaction of a change.
type write struct {
	apply func(ctx context.Context, tx pgx.Tx) error
}

// StoreWrite marks a write as a storage.Write.
func (*write) StoreWrite() {}

// writesOf turns the seam's writes back into this store's; a write another store made is
// refused.
func writesOf(ws []storage.Write) ([]*write, error) {
	out := make([]*write, 0, len(ws))
	for _, w := range ws {
		switch x := w.(type) {
		case *write:
			out = append(out, x)
		case nil:
		default:
			return nil, fmt.Errorf("postgres store: a write of type %T is not this store's", w)
		}
	}
	return out, nil
}

func applyWrites(ctx context.Context, tx pgx.Tx, ws []*write) error {
	for _, w := range ws {
		if err := w.apply(ctx, tx); err != nil {
			return err
		}
	}
	return nil
}

// Apply stores writes on their own, in one transaction.
func (s *Store) Apply(ctx context.Context, writes ...storage.Write) error {
	ws, err := writesOf(writes)
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(tx pgx.Tx) error { return applyWrites(ctx, tx, ws) })
}

// notFound is a missing record: it wraps storage.ErrNotFound and says what was looked up.
func notFound(what, tenant, id string) error {
	return fmt.Errorf("%s %s of %s: %w", what, id, tenant, storage.ErrNotFound)
}

var marshal = proto.MarshalOptions{Deterministic: true}

// encode is the deterministic protobuf encoding of m.
func encode(what string, m proto.Message) ([]byte, error) {
	b, err := marshal.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", what, err)
	}
	return b, nil
}

// decode reads the protobuf encoding of a record into m.
func decode(what string, b []byte, m proto.Message) error {
	if err := proto.Unmarshal(b, m); err != nil {
		return fmt.Errorf("decode %s: %w", what, err)
	}
	return nil
}

// Plans keeps plans (tables plans and plan_objects).
func (s *Store) Plans() storage.Plans { return &plans{s} }

// Executions keeps executions (table executions).
func (s *Store) Executions() storage.Executions { return &executions{s} }

// Journal keeps the executions' journals (table journal).
func (s *Store) Journal() storage.Journal { return &journal{s} }

// Sources keeps sources and the sealed configurations of sources and destinations (tables
// sources and configs).
func (s *Store) Sources() storage.Sources { return &sources{s} }

// Destinations keeps destinations and the sources they were made from (tables destinations
// and destination_origins).
func (s *Store) Destinations() storage.Destinations { return &destinations{s} }

// Receipts keeps receipts' signed bytes (table receipts).
func (s *Store) Receipts() storage.Receipts { return &receipts{s} }

// Manifests keeps manifests by asset id (table manifests).
func (s *Store) Manifests() storage.Manifests { return &manifests{s} }

// Events keeps event streams (table events).
func (s *Store) Events() storage.Events { return &events{s} }

// VaultMeta is the vault's records and its tenants' wrapped data keys.
func (s *Store) VaultMeta() storage.VaultMeta { return &VaultMeta{s} }

// VaultChanges is the vault's change feed (table vault_changes).
func (s *Store) VaultChanges() storage.VaultChanges { return &vaultChanges{s} }

// VaultChanged is the Write that appends an entry for a vault object to the change feed.
func (s *Store) VaultChanged(tenant, objectID string) storage.Write {
	return &write{func(ctx context.Context, tx pgx.Tx) error { return logChange(ctx, tx, tenant, objectID) }}
}

var _ storage.Hosted = (*Store)(nil)
