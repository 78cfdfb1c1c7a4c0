-- logtally fleet schema, version 2: node identities.
--
-- A node is its local database, not its name: the first start in fleet mode
-- creates a random identity (id) in the local database and registers it
-- here with the node's name (--node). A name is held by one identity at a
-- time, so a second database shipping under a name already taken is
-- refused, whatever the timing (two machines given one --node, a database
-- replaced by a new one). The name labels the node's rows in the count
-- tables (their node column); the identity owns the cursor.
--
-- last_seq and last_sum are the node's cursor: the last batch applied and a
-- checksum of it (SHA-256 of its outbox entry, first 16 bytes). A node
-- whose local database is behind the fleet (restored from a backup, copied
-- from another machine) holds, under last_seq, another batch than the one
-- applied, or none: the checksum tells, and the node takes the fleet's
-- read positions (node_positions) instead of shipping lines counted
-- before.
--
-- Before version 2 cursors were kept in logtally.cursors under the node's
-- name; a node registering a name that has such a cursor takes it over.

CREATE TABLE logtally.nodes (
    id               uuid PRIMARY KEY,
    name             text COLLATE "C" NOT NULL UNIQUE,
    last_seq         bigint NOT NULL DEFAULT 0,
    last_sum         bytea,                 -- NULL: taken over from logtally.cursors, or none applied
    window_seconds   integer,               -- the node's --window
    max_skew_seconds integer,               -- the node's --max-skew
    clock_offset_ms  bigint,                -- the node's clock minus the database's, when last measured
    registered_at    timestamptz NOT NULL DEFAULT now(),
    seen_at          timestamptz NOT NULL DEFAULT now()
);

-- How far each node has read each of its files, as of its last batch
-- applied: where a node whose local database is behind the fleet resumes.
-- file is the file's identity in the node's database (a fingerprint of its
-- first line).
CREATE TABLE logtally.node_positions (
    node     uuid NOT NULL REFERENCES logtally.nodes (id) ON DELETE CASCADE,
    file     text COLLATE "C" NOT NULL,
    position bigint NOT NULL,
    PRIMARY KEY (node, file)
);
