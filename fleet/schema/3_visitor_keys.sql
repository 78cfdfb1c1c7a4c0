-- logtally fleet schema, version 3: visitor keys that the database never holds.
--
-- Before version 3 every node hashed visitors with one salt kept here
-- (settings.salt), beside the hashes: whoever could read the database could
-- hash every IPv4 address with it and find the visitors' addresses. Now
-- each node hashes a visitor with the key of the line's day, which it
-- derives from a secret file given to every node (--visitor-secret-file,
-- HMAC-SHA-256 of the day); the database holds no key and no secret, so a
-- visitor column is one visitor within one day and tells nothing more.
--
-- verifier is what tells nodes given different secrets apart:
-- HMAC-SHA-256(secret, 'logtally verifier'), stored by the first node to
-- start with a secret, compared by every later one (a node with another
-- secret stops shipping). It is the MAC of another message than any day's,
-- so it reveals nothing of the keys.
--
-- The salt column is dropped, and the table rewritten (CLUSTER), so that
-- the salt's bytes leave the table's file, not only its visible rows.
-- Hashes made with it stay in the visitor sets until they are pruned (the
-- visitor span, two days by default, and the live window for
-- logtally.visitors).

ALTER TABLE logtally.settings DROP COLUMN salt;
ALTER TABLE logtally.settings ADD COLUMN verifier bytea;
CLUSTER logtally.settings USING settings_pkey;
