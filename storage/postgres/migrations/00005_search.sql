-- The vault's search index on PostgreSQL full-text search (storage/postgres/pgsearch), shared
-- by every replica on the database. One row per searchable vault object: no text is kept,
-- only each text field's lexemes and positions (tsvector) and the keyword values filtered on.

-- +goose Up
CREATE TABLE search_docs (
    tenant     text COLLATE "C" NOT NULL,
    id         text COLLATE "C" NOT NULL,
    order_key  text COLLATE "C" NOT NULL, -- newest first, then id descending (search.Doc.OrderKey)
    date       timestamptz NOT NULL,
    type       text COLLATE "C" NOT NULL,
    mime_type  text COLLATE "C" NOT NULL,
    provider   text COLLATE "C" NOT NULL,
    source_id  text COLLATE "C" NOT NULL,
    state      text COLLATE "C" NOT NULL,
    f_subject  tsvector NOT NULL,
    f_from     tsvector NOT NULL,
    f_to       tsvector NOT NULL,
    f_cc       tsvector NOT NULL,
    f_name     tsvector NOT NULL,
    f_body     tsvector NOT NULL,
    words      tsvector NOT NULL, -- every text field's, for the GIN index
    stamp      bigint   NOT NULL, -- from search_stamp at each write: what a rebuild replaced
    PRIMARY KEY (tenant, id)
);
CREATE INDEX search_docs_order ON search_docs (tenant, order_key);
CREATE INDEX search_docs_words ON search_docs USING gin (words);
CREATE SEQUENCE search_stamp;

-- The tenants that have an index (an empty one counts), as a bleve index's directory would.
CREATE TABLE search_tenants (
    tenant  text COLLATE "C" PRIMARY KEY
);

-- How far the index has applied the vault's change feed (vault_changes): one row, locked by
-- the replica applying the next batch, so batches are applied one at a time and in order.
CREATE TABLE search_feed (
    one   boolean PRIMARY KEY DEFAULT true CHECK (one),
    last  bigint  NOT NULL
);
INSERT INTO search_feed (last) VALUES (0);

-- +goose Down
DROP TABLE search_feed, search_tenants, search_docs;
DROP SEQUENCE search_stamp;
