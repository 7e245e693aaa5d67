-- Schema version 7: the engine's signed receipt of a settlement, when the engine signs
-- (GetRules lists its `signing_keys`): Settle's `signature` (128 hex, Ed25519 over the
-- reveal) and `signing_key_id`. The page checks the signature in the browser with the
-- listed public key. NULL when the engine signs nothing, and for rounds settled before.
ALTER TABLE rounds ADD COLUMN signature TEXT;
ALTER TABLE rounds ADD COLUMN signing_key_id TEXT;
