-- The resources the hosted API lists (storage.Resources) beyond the store's, the owner
-- lookup of ids, the tenants' opaque state (intel, creator), usage counters and ceilings.

-- +goose Up
CREATE TABLE jobs (
    tenant  text COLLATE "C"  NOT NULL,
    id      text COLLATE "C"  NOT NULL,
    kind    text COLLATE "C"  NOT NULL,
    status  text COLLATE "C"  NOT NULL,
    body    bytea NOT NULL,
    PRIMARY KEY (tenant, id)
);

CREATE TABLE audit (
    tenant  text COLLATE "C"  NOT NULL,
    id      text COLLATE "C"  NOT NULL,
    body    bytea NOT NULL,
    PRIMARY KEY (tenant, id)
);

CREATE TABLE meters (
    tenant  text COLLATE "C"  NOT NULL,
    id      text COLLATE "C"  NOT NULL,
    body    bytea NOT NULL,
    PRIMARY KEY (tenant, id)
);

CREATE TABLE trials (
    tenant  text COLLATE "C"  NOT NULL,
    id      text COLLATE "C"  NOT NULL,
    body    bytea NOT NULL,
    PRIMARY KEY (tenant, id)
);

-- A plan header stored through the resource lists (not Plans.Put) counts no objects.
ALTER TABLE plans ALTER COLUMN n_objects SET DEFAULT 0;

-- OwnerOf finds the tenant of an id (ids are prefixed ULIDs, unique across tenants) in the
-- tables of the kinds the API addresses by id, through these indexes: no owner index to keep
-- in step, and an erased record has no owner.
CREATE INDEX plans_id ON plans (id);
CREATE INDEX executions_id ON executions (id);
CREATE INDEX sources_id ON sources (id);
CREATE INDEX destinations_id ON destinations (id);
CREATE INDEX jobs_id ON jobs (id);
CREATE INDEX receipts_id ON receipts (id);
CREATE INDEX vault_objects_id ON vault_objects (id);
CREATE INDEX meters_id ON meters (id);
CREATE INDEX trials_id ON trials (id);

-- Opaque values of a tenant by key: kind 'intel' (the detectors' state) or 'creator'.
CREATE TABLE tenant_blobs (
    tenant  text COLLATE "C"  NOT NULL,
    kind    text COLLATE "C"  NOT NULL,
    key     text COLLATE "C"  NOT NULL,
    value   bytea NOT NULL,
    PRIMARY KEY (tenant, kind, key)
);

-- Usage counters: scope ("org:<id>", ...), month ("2026-11"), meter.
CREATE TABLE usage_counters (
    scope     text COLLATE "C"             NOT NULL,
    month     text COLLATE "C"             NOT NULL,
    meter     text COLLATE "C"             NOT NULL,
    quantity  double precision NOT NULL,
    PRIMARY KEY (scope, month, meter)
);
CREATE INDEX usage_counters_month ON usage_counters (month, scope);

-- Keys of deltas added once (AddOnce), as opaque bytes.
CREATE TABLE usage_once (
    key  bytea PRIMARY KEY
);

-- How far the usage log has been added to the counters.
CREATE TABLE usage_log_offset (
    one     boolean PRIMARY KEY DEFAULT true CHECK (one),
    offset_ bigint  NOT NULL
);

CREATE TABLE ceilings (
    org_id      text COLLATE "C"   PRIMARY KEY,
    cents       bigint NOT NULL,
    updated_at  text COLLATE "C"   NOT NULL
);

-- Probe's records: each probe writes one, reads it back after the commit, deletes it.
CREATE TABLE health (
    token  text COLLATE "C" PRIMARY KEY,
    at     timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE health, ceilings, usage_log_offset, usage_once, usage_counters, tenant_blobs;
DROP INDEX plans_id, executions_id, sources_id, destinations_id, receipts_id, vault_objects_id;
ALTER TABLE plans ALTER COLUMN n_objects DROP DEFAULT;
DROP TABLE trials, meters, audit, jobs;
