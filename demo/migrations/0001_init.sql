-- Reference platform schema, version 1. Money is INTEGER minor units (cents); every
-- arithmetic on it happens in Rust with checked operations, never in SQL (SQLite turns an
-- overflowing integer sum into a float).

-- Players. The PIN is an argon2id PHC string; the player's own maximum bet (NULL = the
-- table's) and when they last changed it (Unix ms) implement the weekly limit rule.
CREATE TABLE players (
    id               INTEGER PRIMARY KEY,
    name             TEXT    NOT NULL UNIQUE,
    pin_hash         TEXT    NOT NULL,
    max_bet          INTEGER CHECK (max_bet IS NULL OR max_bet > 0),
    limit_changed_ms INTEGER,
    next_nonce       INTEGER NOT NULL DEFAULT 0 CHECK (next_nonce >= 0),
    created_ms       INTEGER NOT NULL
);

CREATE TABLE sessions (
    token      TEXT    PRIMARY KEY,
    player_id  INTEGER NOT NULL REFERENCES players(id),
    created_ms INTEGER NOT NULL
);

-- Double-entry ledger: accounts, transactions (each with a unique idempotency key) and
-- entries. Every transaction's entries sum to zero; an account's balance is the sum of its
-- entries (`reddog-demo ledger` checks both). `balance` is a cache written in the same
-- database transaction as the entries.
CREATE TABLE accounts (
    id             INTEGER PRIMARY KEY,
    name           TEXT    NOT NULL UNIQUE,
    player_id      INTEGER UNIQUE REFERENCES players(id),
    allow_negative INTEGER NOT NULL CHECK (allow_negative IN (0, 1)),
    balance        INTEGER NOT NULL DEFAULT 0,
    CHECK (allow_negative = 1 OR balance >= 0)
);
INSERT INTO accounts (name, allow_negative) VALUES ('cashier', 1), ('house', 1);

CREATE TABLE transactions (
    id         INTEGER PRIMARY KEY,
    idem_key   TEXT    NOT NULL UNIQUE,
    kind       TEXT    NOT NULL CHECK (kind IN ('deposit', 'bet', 'raise', 'payout', 'refund')),
    round_id   TEXT,
    created_ms INTEGER NOT NULL
);

CREATE TABLE entries (
    id         INTEGER PRIMARY KEY,
    txn_id     INTEGER NOT NULL REFERENCES transactions(id),
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    amount     INTEGER NOT NULL CHECK (amount <> 0)
);
CREATE INDEX entries_by_account ON entries(account_id);
CREATE INDEX entries_by_txn ON entries(txn_id);

-- Rounds. `state` is the platform's write-ahead record of where the round is, so a crash at
-- any point leaves enough to finish it: every state names the next engine call and holds
-- its exact request (the engine's calls are deterministic: a retry returns the same bytes).
--   committed  CommitSeed done; commitment and nonce shown; nothing debited
--   betting    bet debited; StartRound is next
--   dealt      StartRound done; waiting for the player's raise or stand
--   deciding   decision recorded (raise debited); Decide is next
--   settling   Settle is next (final token stored)
--   settled    credited; terminal
--   expired    the commitment expired unused; nothing was debited; terminal
--   voided     the engine refused to deal; the bet was refunded; terminal
-- The tokens never leave this table: the browser never sees them.
CREATE TABLE rounds (
    round_id          TEXT    PRIMARY KEY,
    player_id         INTEGER NOT NULL REFERENCES players(id),
    state             TEXT    NOT NULL CHECK (state IN ('committed', 'betting', 'dealt', 'deciding',
                                                        'settling', 'settled', 'expired', 'voided')),
    nonce             INTEGER NOT NULL CHECK (nonce >= 0),
    table_id          TEXT    NOT NULL,
    decks             INTEGER NOT NULL,
    commitment        TEXT    NOT NULL,
    commitment_token  BLOB    NOT NULL,
    commit_expires_ms INTEGER NOT NULL,
    client_seed       TEXT,
    bet               INTEGER CHECK (bet IS NULL OR bet > 0),
    limit_min         INTEGER,
    limit_max         INTEGER,
    round_token       BLOB,
    step              INTEGER,
    transcript        TEXT,
    cards             TEXT,            -- JSON array of card codes shown so far
    hand_class        TEXT,
    spread            INTEGER,
    spread_odds       INTEGER,
    decision          TEXT CHECK (decision IS NULL OR decision IN ('raise', 'stand', 'default')),
    stake             INTEGER,
    outcome           TEXT,
    rule              TEXT,
    odds              INTEGER,
    returned          INTEGER,
    reveal_json       TEXT,
    balance_after     INTEGER,
    recovered         INTEGER NOT NULL DEFAULT 0,
    note              TEXT,
    created_ms        INTEGER NOT NULL,
    updated_ms        INTEGER NOT NULL,
    UNIQUE (player_id, nonce)
);
-- At most one unfinished round per player.
CREATE UNIQUE INDEX one_open_round ON rounds(player_id)
    WHERE state NOT IN ('settled', 'expired', 'voided');
CREATE INDEX rounds_by_player ON rounds(player_id, created_ms);
