-- Schema version 4: one to seven seats per deal. `seats` is a JSON array, one object per
-- seat in seat order: {"bet", "decision" (null, "raise", "stand" or "default"), "sent"
-- (the decision has reached the engine), "stake", "outcome", "rule", "odds", "returned"}.
-- The columns `bet`, `stake` and `returned` hold the round's totals; each seat's money is
-- posted under its own ledger key (`<round>:seat<k>:bet|raise|payout|refund`).
-- Rounds from before this version have '[]' and their one seat in the columns.
ALTER TABLE rounds ADD COLUMN seats TEXT NOT NULL DEFAULT '[]';
