-- Schema version 10: the way back in for a player whose name is being guessed
-- (crate::accounts). `players.recovery_sha256` is the SHA-256 (hex) of the player's recovery
-- code, shown once at sign-up (and again, new, after each use); NULL for a player from
-- before this version until their next sign-in issues one. `trusted_devices` holds the
-- SHA-256 of each device token (the `rd_device` cookie) that signed in to a player with the
-- right PIN: from such a device, nobody else's wrong PINs make the player wait.
ALTER TABLE players ADD COLUMN recovery_sha256 TEXT;
CREATE TABLE trusted_devices (
    token_sha256 TEXT    NOT NULL,
    player_id    INTEGER NOT NULL REFERENCES players(id),
    created_ms   INTEGER NOT NULL,
    last_used_ms INTEGER NOT NULL,
    PRIMARY KEY (token_sha256, player_id)
);
CREATE INDEX trusted_devices_by_player ON trusted_devices(player_id, last_used_ms);
