-- Schema version 6: sessions that expire. `last_seen_ms` is when the session was last used
-- (refreshed at most once a minute); a session idle too long or older than its absolute
-- lifetime is ended (crate::accounts). The index serves "sign out everywhere".
ALTER TABLE sessions ADD COLUMN last_seen_ms INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET last_seen_ms = created_ms;
CREATE INDEX sessions_by_player ON sessions(player_id);
