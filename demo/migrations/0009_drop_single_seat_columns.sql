-- Schema version 9: the single-seat columns `decision`, `outcome`, `rule` and `odds` go.
-- Since version 4 every seat's decision and result is in `seats` (JSON), and the columns
-- only repeated the first seat's; a round from before version 4 still had its one seat
-- there and `seats` = '[]'. That seat is written into `seats` first (`sent`: the decision
-- had reached the engine unless the round was still `deciding`), so no round loses it.
-- `bet`, `stake` and `returned` stay: they are the round's totals.
UPDATE rounds
   SET seats = json_array(json_object(
           'bet', bet,
           'decision', decision,
           'sent', json(CASE WHEN decision IS NOT NULL AND state <> 'deciding' THEN 'true' ELSE 'false' END),
           'stake', coalesce(stake, bet),
           'outcome', outcome,
           'rule', rule,
           'odds', odds,
           'returned', returned))
 WHERE seats = '[]' AND bet IS NOT NULL;
ALTER TABLE rounds DROP COLUMN decision;
ALTER TABLE rounds DROP COLUMN outcome;
ALTER TABLE rounds DROP COLUMN rule;
ALTER TABLE rounds DROP COLUMN odds;
