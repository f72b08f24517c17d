-- Leases on units of work (executions, jobs, webhooks' deliveries, background loops), so that
-- replicas on one database take each unit one at a time (storage.Leases). Tokens come from one
-- sequence: a lease claimed anew never has the token of one before it, even after a release
-- deleted the row.

-- +goose Up
CREATE SEQUENCE lease_tokens;

CREATE TABLE leases (
    name        text COLLATE "C" PRIMARY KEY,
    holder      text COLLATE "C" NOT NULL,
    token       bigint NOT NULL,
    expires_at  timestamptz NOT NULL
);

-- +goose Down
DROP TABLE leases;
DROP SEQUENCE lease_tokens;
