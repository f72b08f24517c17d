-- What replicas of one deployment share beyond the records: sealed secrets (the receipt
-- signing keys) and the usage log of API operations.

-- +goose Up
CREATE TABLE secrets (
    name     text COLLATE "C" PRIMARY KEY,
    version  bigint NOT NULL,
    sealed   bytea NOT NULL -- sealed by the caller (an envelope under the master key)
);

-- One row per logged increment, deleted when it is added to usage_counters (in the same
-- transaction), so each is counted once whichever replica adds it.
CREATE TABLE usage_log (
    seq       bigserial PRIMARY KEY,
    scope     text COLLATE "C" NOT NULL,
    month     text COLLATE "C" NOT NULL,
    meter     text COLLATE "C" NOT NULL,
    quantity  double precision NOT NULL
);

-- +goose Down
DROP TABLE usage_log, secrets;
