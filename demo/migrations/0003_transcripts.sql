-- Schema version 3: the transcript hash of every engine answer of a round (StartRound,
-- Decide, Settle), in order, as a JSON array of 64-hex strings. The page is shown each one as
-- it arrives and compares them with the reveal's transcript chain (the player's record,
-- docs/design/evidence-contract.md §3).
ALTER TABLE rounds ADD COLUMN transcripts TEXT NOT NULL DEFAULT '[]';
