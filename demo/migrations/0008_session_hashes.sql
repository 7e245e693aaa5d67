-- Schema version 8: the sessions table keeps the SHA-256 of each session token (hex), not
-- the token: a copy of the database (a backup, a support dump) no longer holds live
-- cookies. Stored tokens cannot be hashed in SQL, so the sessions open at the upgrade end:
-- each player signs in once more (open rounds are kept).
DELETE FROM sessions;
ALTER TABLE sessions RENAME COLUMN token TO token_sha256;
