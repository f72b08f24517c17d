-- The records of the embedding package's store (storage.Store). Every table is keyed by
-- tenant ("test:<owner>" or "live:<owner>") first; ids are ULIDs, so id order is creation
-- order and "newest first" is descending id. Protobuf records are kept as bytea (the
-- deterministic protobuf encoding) beside the columns that lists filter and order on.

-- +goose Up
CREATE TABLE plans (
    tenant      text COLLATE "C"   NOT NULL,
    id          text COLLATE "C"   NOT NULL,
    state       text COLLATE "C"   NOT NULL,
    n_objects   int    NOT NULL,
    header      bytea  NOT NULL, -- the plan without its objects
    PRIMARY KEY (tenant, id)
);

-- A plan's objects, one row each, in the plan's order; they never change once stored.
CREATE TABLE plan_objects (
    tenant   text COLLATE "C"  NOT NULL,
    plan_id  text COLLATE "C"  NOT NULL,
    idx      int   NOT NULL,
    object   bytea NOT NULL,
    PRIMARY KEY (tenant, plan_id, idx)
);

CREATE TABLE executions (
    tenant   text COLLATE "C"  NOT NULL,
    id       text COLLATE "C"  NOT NULL,
    plan_id  text COLLATE "C"  NOT NULL,
    status   text COLLATE "C"  NOT NULL,
    body     bytea NOT NULL,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX executions_status ON executions (status);

-- Each execution's journal; pos is the entry's position, increasing along a journal in
-- commit order (Append holds a lock on its journal while it writes).
CREATE TABLE journal (
    pos           bigserial PRIMARY KEY,
    tenant        text COLLATE "C"  NOT NULL,
    execution_id  text COLLATE "C"  NOT NULL,
    entry         bytea NOT NULL
);
CREATE INDEX journal_execution ON journal (tenant, execution_id, pos);

CREATE TABLE sources (
    tenant  text COLLATE "C"  NOT NULL,
    id      text COLLATE "C"  NOT NULL,
    body    bytea NOT NULL,
    PRIMARY KEY (tenant, id)
);

-- Sealed configurations of sources and destinations, by their ids.
CREATE TABLE configs (
    tenant  text COLLATE "C"  NOT NULL,
    id      text COLLATE "C"  NOT NULL,
    sealed  bytea NOT NULL,
    PRIMARY KEY (tenant, id)
);

CREATE TABLE destinations (
    tenant  text COLLATE "C"  NOT NULL,
    id      text COLLATE "C"  NOT NULL,
    body    bytea NOT NULL,
    PRIMARY KEY (tenant, id)
);

CREATE TABLE destination_origins (
    tenant     text COLLATE "C" NOT NULL,
    id         text COLLATE "C" NOT NULL,
    source_id  text COLLATE "C" NOT NULL,
    PRIMARY KEY (tenant, id)
);

-- Receipts as the exact signed bytes issued.
CREATE TABLE receipts (
    tenant  text COLLATE "C"  NOT NULL,
    id      text COLLATE "C"  NOT NULL,
    raw     bytea NOT NULL,
    PRIMARY KEY (tenant, id)
);

CREATE TABLE manifests (
    tenant    text COLLATE "C"  NOT NULL,
    asset_id  text COLLATE "C"  NOT NULL,
    body      bytea NOT NULL,
    PRIMARY KEY (tenant, asset_id)
);

-- Event streams: tenant is the stream's name (a tenant's own stream is its tenant string).
CREATE TABLE events (
    tenant  text COLLATE "C"  NOT NULL,
    id      text COLLATE "C"  NOT NULL,
    type    text COLLATE "C"  NOT NULL,
    body    bytea NOT NULL,
    PRIMARY KEY (tenant, id)
);

-- The vault's records (vault.Meta), as the vault's JSON, with the state of objects apart.
CREATE TABLE vault_objects (
    tenant  text COLLATE "C"  NOT NULL,
    id      text COLLATE "C"  NOT NULL,
    state   text COLLATE "C"  NOT NULL,
    body    jsonb NOT NULL,
    PRIMARY KEY (tenant, id)
);

CREATE TABLE vault_blobs (
    tenant  text COLLATE "C"  NOT NULL,
    digest  text COLLATE "C"  NOT NULL,
    body    jsonb NOT NULL,
    PRIMARY KEY (tenant, digest)
);

CREATE TABLE vault_packs (
    tenant  text COLLATE "C"  NOT NULL,
    name    text COLLATE "C"  NOT NULL,
    body    jsonb NOT NULL,
    PRIMARY KEY (tenant, name)
);

-- Each tenant's data key, wrapped under the key-encryption key.
CREATE TABLE vault_keys (
    tenant   text COLLATE "C"  PRIMARY KEY,
    wrapped  bytea NOT NULL
);

-- The vault's change feed. Sequence numbers come from the one row of vault_change_seq,
-- which a writer holds locked until it commits: numbers are given in commit order, so a
-- reader that has read up to n never later sees an entry below n appear.
CREATE TABLE vault_change_seq (
    one   boolean PRIMARY KEY DEFAULT true CHECK (one),
    last  bigint  NOT NULL
);
INSERT INTO vault_change_seq (last) VALUES (0);

CREATE TABLE vault_changes (
    seq        bigint PRIMARY KEY,
    tenant     text COLLATE "C"   NOT NULL,
    object_id  text COLLATE "C"   NOT NULL
);

-- +goose Down
DROP TABLE vault_changes, vault_change_seq, vault_keys, vault_packs, vault_blobs, vault_objects,
    events, manifests, receipts, destination_origins, destinations, configs, sources, journal,
    executions, plan_objects, plans;
