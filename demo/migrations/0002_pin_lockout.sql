-- Schema version 2: wrong-PIN lock-out. Five wrong PINs in a row (at sign-in or when
-- changing a limit) lock PIN checks for that player for 15 minutes; a right PIN resets the
-- count.
ALTER TABLE players ADD COLUMN pin_failures INTEGER NOT NULL DEFAULT 0 CHECK (pin_failures >= 0);
ALTER TABLE players ADD COLUMN pin_locked_until_ms INTEGER;
