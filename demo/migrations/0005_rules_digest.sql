-- Schema version 5: the table's rules digest the engine's CommitSeed answer showed with the
-- commitment (64 hex). The page keeps it in the player's record and checks it against the
-- reveal's `rules_digest`. NULL for rounds committed before this version.
ALTER TABLE rounds ADD COLUMN rules_digest TEXT;
