-- logtally fleet schema, version 4: page views per path and day, per node.
--
-- Every node added its page views to one row per site, day and path, so
-- nodes shipping at once waited for each other there, each holding the
-- row's lock for the rest of its transaction. Now each node adds to its
-- own row (node, logtally's --node), which no other node touches, and a
-- day's page views of a path are the sum over nodes, as with the other
-- per-node counts. Rows from before carry node ''.

ALTER TABLE logtally.day_paths ADD COLUMN node text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE logtally.day_paths DROP CONSTRAINT day_paths_pkey;
ALTER TABLE logtally.day_paths ADD PRIMARY KEY (site, day, node, path);
