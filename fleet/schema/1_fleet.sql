-- logtally fleet schema, version 1.
--
-- logtally creates and upgrades this schema itself (fleet.Open): each
-- version's file runs once, recorded in logtally.schema_version, in a
-- transaction that holds pg_advisory_xact_lock(7813577628059462777)
-- ("logtally" in ASCII), so nodes that start together do not race. Read
-- it freely (psql, Grafana); write to it only through logtally.
--
-- Conventions
--
--   * site leads every key. It is "default" until logtally serves several
--     sites, and it is the distribution column when the schema is sharded
--     (see the end of this file).
--   * minute, hour and second are the start of their bucket, timestamptz;
--     day is a calendar date in the fleet's zone (settings.tz).
--   * visitor is a salted 64-bit hash of the visitor (address, or address
--     and user agent), stored as a signed bigint. All nodes hash with
--     settings.salt, so one visitor is one value across the fleet. A hash
--     cannot be turned back into an address.
--   * Counts are kept per node (the node column, logtally's --node), so
--     that nodes never wait on each other to add to the same minute, and a
--     node's own share stays readable. A site's count is the sum over its
--     nodes: the site_* views below do that sum.
--   * What must be de-duplicated across nodes is kept once per site: the
--     visitor sets, each visitor's last page view, page views per path.
--   * Text keys are COLLATE "C": byte order, as everywhere in logtally.
--
-- How a batch gets here: a node ships each committed batch with a sequence
-- number, and one transaction adds its counts and moves the node's cursor
-- (cursors.last_seq). A batch at or below the cursor was applied before
-- and is skipped, so a batch re-sent after a crash or a lost reply is not
-- counted twice.

CREATE TABLE logtally.settings (
    id         boolean PRIMARY KEY DEFAULT true CHECK (id), -- one row
    salt       bigint NOT NULL,        -- visitor-hash salt, chosen by the first node
    tz         text NOT NULL,          -- zone of the days, fixed at creation
    created_at timestamptz NOT NULL DEFAULT now()
);

-- How far each node has shipped, per site.
CREATE TABLE logtally.cursors (
    site       text COLLATE "C" NOT NULL,
    node       text COLLATE "C" NOT NULL,
    last_seq   bigint NOT NULL,        -- the last batch applied; the next must be last_seq+1
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (site, node)
);

-- History: one row per site, bucket and node.
--
-- visitors is the number of distinct visitors this node was the first to
-- ship for the bucket, so the sum over nodes is the bucket's distinct
-- visitors, exact. approximate is set when a node shipped page views for a
-- bucket after its visitor set was dropped (see Prune: older than the
-- visitor span), whose visitors then could not be told apart and were not
-- added: the sum is then a lower bound.
CREATE TABLE logtally.minutes (
    site        text COLLATE "C" NOT NULL,
    minute      timestamptz NOT NULL,
    node        text COLLATE "C" NOT NULL,
    requests    bigint NOT NULL DEFAULT 0,
    pageviews   bigint NOT NULL DEFAULT 0,
    visitors    bigint NOT NULL DEFAULT 0,
    bytes       bigint NOT NULL DEFAULT 0,   -- response bytes sent
    rejected    bigint NOT NULL DEFAULT 0,   -- lines that did not parse
    status_1xx  bigint NOT NULL DEFAULT 0,
    status_2xx  bigint NOT NULL DEFAULT 0,
    status_3xx  bigint NOT NULL DEFAULT 0,
    status_4xx  bigint NOT NULL DEFAULT 0,
    status_5xx  bigint NOT NULL DEFAULT 0,
    approximate boolean NOT NULL DEFAULT false,
    PRIMARY KEY (site, minute, node)
);

CREATE TABLE logtally.hours (
    site        text COLLATE "C" NOT NULL,
    hour        timestamptz NOT NULL,        -- UTC hours
    node        text COLLATE "C" NOT NULL,
    requests    bigint NOT NULL DEFAULT 0,
    pageviews   bigint NOT NULL DEFAULT 0,
    visitors    bigint NOT NULL DEFAULT 0,
    bytes       bigint NOT NULL DEFAULT 0,
    rejected    bigint NOT NULL DEFAULT 0,
    status_1xx  bigint NOT NULL DEFAULT 0,
    status_2xx  bigint NOT NULL DEFAULT 0,
    status_3xx  bigint NOT NULL DEFAULT 0,
    status_4xx  bigint NOT NULL DEFAULT 0,
    status_5xx  bigint NOT NULL DEFAULT 0,
    approximate boolean NOT NULL DEFAULT false,
    PRIMARY KEY (site, hour, node)
);

CREATE TABLE logtally.days (
    site        text COLLATE "C" NOT NULL,
    day         date NOT NULL,               -- in settings.tz
    node        text COLLATE "C" NOT NULL,
    requests    bigint NOT NULL DEFAULT 0,
    pageviews   bigint NOT NULL DEFAULT 0,
    visitors    bigint NOT NULL DEFAULT 0,
    bytes       bigint NOT NULL DEFAULT 0,
    rejected    bigint NOT NULL DEFAULT 0,
    status_1xx  bigint NOT NULL DEFAULT 0,
    status_2xx  bigint NOT NULL DEFAULT 0,
    status_3xx  bigint NOT NULL DEFAULT 0,
    status_4xx  bigint NOT NULL DEFAULT 0,
    status_5xx  bigint NOT NULL DEFAULT 0,
    approximate boolean NOT NULL DEFAULT false,
    PRIMARY KEY (site, day, node)
);

-- Visitor sets: who has been counted in a bucket, so that a visitor seen by
-- several nodes, or in several batches, is counted once. A node inserts its
-- batch's visitors with ON CONFLICT DO NOTHING and adds the number it
-- inserted to its row above. Kept for the visitor span (two days by
-- default), after which a bucket's count is final.
CREATE TABLE logtally.minute_visitors (
    site    text COLLATE "C" NOT NULL,
    minute  timestamptz NOT NULL,
    visitor bigint NOT NULL,
    PRIMARY KEY (site, minute, visitor)
);

CREATE TABLE logtally.hour_visitors (
    site    text COLLATE "C" NOT NULL,
    hour    timestamptz NOT NULL,
    visitor bigint NOT NULL,
    PRIMARY KEY (site, hour, visitor)
);

CREATE TABLE logtally.day_visitors (
    site    text COLLATE "C" NOT NULL,
    day     date NOT NULL,
    visitor bigint NOT NULL,
    PRIMARY KEY (site, day, visitor)
);

-- The live window, to the second. Kept for the window plus the clock skew
-- allowed (ten and two minutes by default).
CREATE TABLE logtally.seconds (
    site      text COLLATE "C" NOT NULL,
    second    timestamptz NOT NULL,
    node      text COLLATE "C" NOT NULL,
    requests  bigint NOT NULL DEFAULT 0,
    pageviews bigint NOT NULL DEFAULT 0,
    rejected  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (site, second, node)
);

-- Page views per path of the live seconds, per second and summed per
-- minute: the window's top pages add up its whole minutes from
-- window_minute_paths and only the seconds of the minutes at its two ends
-- from second_paths, a few times fewer rows.
CREATE TABLE logtally.second_paths (
    site      text COLLATE "C" NOT NULL,
    second    timestamptz NOT NULL,
    path      text COLLATE "C" NOT NULL,
    pageviews bigint NOT NULL,
    PRIMARY KEY (site, second, path)
);

CREATE TABLE logtally.window_minute_paths (
    site      text COLLATE "C" NOT NULL,
    minute    timestamptz NOT NULL,
    path      text COLLATE "C" NOT NULL,
    pageviews bigint NOT NULL,
    PRIMARY KEY (site, minute, path)
);

-- Each visitor's latest page view, whichever node saw it (upserted with
-- GREATEST). The window's distinct visitors are the rows with last_seen in
-- the window.
CREATE TABLE logtally.visitors (
    site      text COLLATE "C" NOT NULL,
    visitor   bigint NOT NULL,
    last_seen timestamptz NOT NULL,
    PRIMARY KEY (site, visitor)
);
CREATE INDEX visitors_last_seen ON logtally.visitors (site, last_seen);

-- Page views per path and day (kept as long as hours), and all time:
-- paths holds what Prune folded out of day_paths, so a path's total is its
-- paths row plus its day_paths rows (the path_totals view).
CREATE TABLE logtally.day_paths (
    site      text COLLATE "C" NOT NULL,
    day       date NOT NULL,
    path      text COLLATE "C" NOT NULL,
    pageviews bigint NOT NULL,
    PRIMARY KEY (site, day, path)
);
CREATE INDEX day_paths_path ON logtally.day_paths (site, path);

CREATE TABLE logtally.paths (
    site      text COLLATE "C" NOT NULL,
    path      text COLLATE "C" NOT NULL,
    pageviews bigint NOT NULL,
    PRIMARY KEY (site, path)
);

-- Site-wide views, for people and dashboards. For example, the page views
-- and visitors of the last hour, by minute, in Grafana:
--
--   SELECT minute AS time, pageviews, visitors FROM logtally.site_minutes
--   WHERE site = 'default' AND $__timeFilter(minute) ORDER BY minute;
--
-- and the live window of the last ten minutes, as logtally computes it:
--
--   SELECT (SELECT count(*) FROM logtally.visitors
--           WHERE site = 'default' AND last_seen > now() - interval '10 minutes') AS visitors,
--          (SELECT sum(pageviews) FROM logtally.seconds
--           WHERE site = 'default' AND second > now() - interval '10 minutes') AS pageviews;
CREATE VIEW logtally.site_minutes AS
SELECT site, minute, sum(requests) AS requests, sum(pageviews) AS pageviews, sum(visitors) AS visitors,
       sum(bytes) AS bytes, sum(rejected) AS rejected, bool_or(approximate) AS approximate
FROM logtally.minutes GROUP BY site, minute;

CREATE VIEW logtally.site_hours AS
SELECT site, hour, sum(requests) AS requests, sum(pageviews) AS pageviews, sum(visitors) AS visitors,
       sum(bytes) AS bytes, sum(rejected) AS rejected, bool_or(approximate) AS approximate
FROM logtally.hours GROUP BY site, hour;

CREATE VIEW logtally.site_days AS
SELECT site, day, sum(requests) AS requests, sum(pageviews) AS pageviews, sum(visitors) AS visitors,
       sum(bytes) AS bytes, sum(rejected) AS rejected, bool_or(approximate) AS approximate
FROM logtally.days GROUP BY site, day;

CREATE VIEW logtally.path_totals AS
SELECT site, path, sum(pageviews) AS pageviews FROM (
    SELECT site, path, pageviews FROM logtally.paths
    UNION ALL
    SELECT site, path, pageviews FROM logtally.day_paths
) AS p GROUP BY site, path;

-- Sharding. When one server is not enough, the schema shards by site with
-- Citus: site leads every key, and a batch, its cursor and everything it
-- adds belong to one site, so with the tables co-located each batch is a
-- transaction on a single shard. For example:
--
--   SELECT create_reference_table('logtally.settings');
--   SELECT create_distributed_table('logtally.cursors', 'site');
--   SELECT create_distributed_table(t::regclass, 'site', colocate_with => 'logtally.cursors')
--   FROM unnest(ARRAY['logtally.minutes', 'logtally.hours', 'logtally.days',
--       'logtally.minute_visitors', 'logtally.hour_visitors', 'logtally.day_visitors',
--       'logtally.seconds', 'logtally.second_paths', 'logtally.window_minute_paths',
--       'logtally.visitors',
--       'logtally.day_paths', 'logtally.paths']) AS t;
--
-- One site's data stays on one shard, so this spreads many sites, not one
-- very busy site.
