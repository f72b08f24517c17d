-- The developer platform's records (accounts, developers, idempotency, the connect flow,
-- webhooks, billing), kept as the platform's JSON in bytea (webhook deliveries must come back
-- byte for byte, which jsonb would not do) beside the columns they are looked up by.

-- +goose Up
CREATE TABLE users (
    id     text COLLATE "C" PRIMARY KEY,
    email  text COLLATE "C" NOT NULL UNIQUE, -- lowercased and trimmed
    body   bytea NOT NULL
);

CREATE TABLE sessions (
    token_hash  text COLLATE "C" PRIMARY KEY,
    user_id     text COLLATE "C" NOT NULL,
    body        bytea NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);

CREATE TABLE orgs (
    id    text COLLATE "C" PRIMARY KEY,
    body  bytea NOT NULL
);

CREATE TABLE applications (
    id      text COLLATE "C" PRIMARY KEY,
    org_id  text COLLATE "C" NOT NULL,
    body    bytea NOT NULL
);
CREATE INDEX applications_org ON applications (org_id, id);

CREATE TABLE api_keys (
    id           text COLLATE "C" PRIMARY KEY,
    app_id       text COLLATE "C" NOT NULL,
    secret_hash  text COLLATE "C" NOT NULL UNIQUE,
    body         bytea NOT NULL
);
CREATE INDEX api_keys_app ON api_keys (app_id, id);

CREATE TABLE connections (
    id       text COLLATE "C" PRIMARY KEY,
    app_id   text COLLATE "C" NOT NULL,
    user_id  text COLLATE "C" NOT NULL,
    body     bytea NOT NULL
);
CREATE INDEX connections_app_user ON connections (app_id, user_id, id);
CREATE INDEX connections_user ON connections (user_id, id);

-- Keys are opaque bytes (the edge joins their parts with NUL, which text cannot hold).
CREATE TABLE idempotency (
    key         bytea PRIMARY KEY,
    created_at  timestamptz NOT NULL,
    done        boolean NOT NULL,
    body        bytea NOT NULL
);
CREATE INDEX idempotency_created ON idempotency (created_at);

CREATE TABLE connect_sessions (
    id       text COLLATE "C" PRIMARY KEY,
    user_id  text COLLATE "C" NOT NULL,
    body     bytea NOT NULL
);
CREATE INDEX connect_sessions_user ON connect_sessions (user_id);

CREATE TABLE oauth_states (
    hash        text COLLATE "C" PRIMARY KEY,
    user_id     text COLLATE "C" NOT NULL,
    expires_at  timestamptz NOT NULL,
    body        bytea NOT NULL
);
CREATE INDEX oauth_states_expires ON oauth_states (expires_at);

CREATE TABLE webhooks (
    id      text COLLATE "C" PRIMARY KEY,
    app_id  text COLLATE "C" NOT NULL,
    body    bytea NOT NULL
);
CREATE INDEX webhooks_app ON webhooks (app_id, id);

CREATE TABLE webhook_queue (
    webhook_id  text COLLATE "C" NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id    text COLLATE "C" NOT NULL,
    body        bytea NOT NULL,
    PRIMARY KEY (webhook_id, event_id)
);

CREATE TABLE webhook_deliveries (
    id          text COLLATE "C" PRIMARY KEY,
    webhook_id  text COLLATE "C" NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    final       boolean NOT NULL,
    created_at  timestamptz NOT NULL,
    body        bytea NOT NULL
);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, id);
CREATE INDEX webhook_deliveries_active ON webhook_deliveries (id) WHERE NOT final;

-- What the payment processor made: customers ("customer/<org>") and invoice items
-- ("item/<org>/<month>/<meter>").
CREATE TABLE billing (
    key    text COLLATE "C" PRIMARY KEY,
    value  text NOT NULL
);

-- +goose Down
DROP TABLE billing, webhook_deliveries, webhook_queue, webhooks, oauth_states, connect_sessions,
    idempotency, connections, api_keys, applications, orgs, sessions, users;
