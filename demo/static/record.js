// The player's record of a round, compared with the reveal (docs/design/evidence-contract.md
// §3). verify.js proves that the reveal is consistent in itself (commitment, cards, amounts,
// transcript); this module proves that what the page SHOWED and what the player DID is the
// round the reveal describes: a platform that alters a displayed card, an outcome text or a
// credited amount — while passing the engine's reveal through untouched — is caught here.
//
// The record is built by the page from what it rendered and sent:
//   {
//     commitment, rules_digest?,            shown before the deal
//     seats: [{ bet, shown_bet, action, unconfirmed }], what the player sent and decided, and
//                                           the bet the seat showed (action:
//                                           "raise", "stand" or null for no decision;
//                                           unconfirmed: the request got no answer)
//     transcripts: ["hex", ...],            the transcript hash of every answer received
//     shown: {                              what the page displayed at the end
//       cards: ["7h", ...], hand_class, spread,
//       seats: [{ outcome, decision, stake, returned }],
//     },
//     balance: { before, debited, after },  balance shown at a point where `debited` of this
//                                           round's money had already left the wallet (0
//                                           before the deal), and the balance shown after
//   }
// The balance may be absent when the page never saw it (the history page has no balance
// before the oldest round it lists); that check is then listed as not made ("unseen"),
// neither passed nor failed. Everything else the platform must have shown: missing is a
// mismatch.
//
// checkRecord(result, record) takes verifyReveal's result and returns
//   { ok, checks: [{ field, ok, seen, shown, expected }], failed: [field…], passed: [field…],
//     unseen: [field…] }
// `field` is a stable key (e.g. "cards", "seat1.returned", "balance"); describeField turns it
// into plain words.

import { handClass, transcriptChain } from "./verify.js";

const big = (v) => (v === null || v === undefined || v === "" ? null : BigInt(v));

const FIELD_WORDS = {
  cards: "the cards on the table",
  hand: "the hand (pair, consecutive or spread)",
  seats: "the number of seats",
  bet: "the bet",
  decision: "the raise or stand",
  stake: "the stake",
  outcome: "the outcome",
  returned: "the amount credited",
  balance: "the balance change",
  transcripts: "the round's transcript",
  commitment: "the commitment shown before the deal",
  rules_digest: "the rules shown with the commitment",
};

// Plain words for a check's field: "seat 2's amount credited", "the cards on the table".
export function describeField(field, words = FIELD_WORDS, seatWord = (n, w) => `seat ${n}: ${w}`) {
  const m = /^seat(\d+)\.(\w+)$/.exec(field);
  if (m) return seatWord(Number(m[1]) + 1, words[m[2]] || m[2]);
  return words[field] || field;
}

// The decisions of a v2 reveal, per seat: "raise" | "stand" | null.
function revealDecisions(reveal, seats) {
  const out = new Array(seats).fill(null);
  for (const step of reveal.decisions || []) for (const d of step) out[Number(d.seat)] = d.action;
  return out;
}

export async function checkRecord(result, record) {
  const checks = [];
  const add = (field, ok, shown, expected, seen = true) => checks.push({ field, ok: seen && !!ok, seen, shown, expected });
  const reveal = result?.reveal;
  if (!reveal || result.verdict === "malformed") {
    return { ok: false, checks, failed: ["reveal"], passed: [], unseen: [] };
  }
  const shown = record.shown || {};

  // Cards and hand, as displayed.
  const cards = (shown.cards || []).join(" ");
  add("cards", cards === reveal.cards.join(" "), cards || "(none)", reveal.cards.join(" "));
  const h = handClass(reveal.cards);
  const kind = h.kind;
  const shownKind = shown.hand_class === "spread" ? "non_consecutive" : shown.hand_class;
  add("hand", shownKind === kind && Number(shown.spread || 0) === h.spread,
    `${shown.hand_class ?? "(none)"} ${shown.spread ?? 0}`, `${kind} ${h.spread}`);

  // The commitment (and rules digest) shown before the deal.
  if (record.commitment !== undefined) {
    add("commitment", String(record.commitment).toLowerCase() === reveal.commitment, record.commitment, reveal.commitment);
  }
  if (record.rules_digest || reveal.rules_digest) {
    add("rules_digest", !!record.rules_digest && record.rules_digest === reveal.rules_digest,
      record.rules_digest ?? "(not shown)", reveal.rules_digest ?? "(not in the reveal)");
  }

  if (reveal.seats) {
    const n = reveal.seats.length;
    const mine = record.seats || [];
    const shownSeats = shown.seats || [];
    add("seats", mine.length === n && shownSeats.length === n, `${mine.length} bet, ${shownSeats.length} shown`, `${n}`);
    const decided = revealDecisions(reveal, n);
    const computed = result.seats || [];
    for (let k = 0; k < n; k++) {
      const s = reveal.seats[k], m = mine[k] || {}, d = shownSeats[k] || {};
      // The bet the player sent, and the bet the seat showed: both must be the revealed one
      // (a platform that plays 10.00 for a 5.00 sent, and shows 10.00, is caught by the first).
      const shownBet = m.shown_bet === undefined ? "" : ` (shown ${m.shown_bet})`;
      add(`seat${k}.bet`, big(m.bet) === s.bet && (m.shown_bet === undefined || big(m.shown_bet) === s.bet),
        `${m.bet ?? "(none)"}${shownBet}`, String(s.bet));
      // The player's own action, and the decision the page displayed, against the reveal's.
      const acted = m.action ?? null;
      const shownDecision = d.decision === "default" ? null : d.decision ?? null;
      // A decision whose request got no answer (an outage) may not have been recorded: the
      // seat then stood without one.
      const actedOk = acted === decided[k] || (m.unconfirmed === true && decided[k] === null);
      add(`seat${k}.decision`, actedOk && shownDecision === decided[k],
        `${acted ?? "none"} (shown ${d.decision ?? "none"})`, decided[k] ?? "none");
      add(`seat${k}.stake`, big(d.stake) === s.stake, d.stake ?? "(none)", String(s.stake));
      const outcome = computed[k]?.outcome;
      add(`seat${k}.outcome`, d.outcome === outcome, d.outcome ?? "(none)", outcome ?? "(unknown)");
      add(`seat${k}.returned`, big(d.returned) === s.returned, d.returned ?? "(none)", String(s.returned));
    }

    // The balance change: what left the wallet after the balance was noted, and what came back.
    const b = record.balance || {};
    const staked = reveal.seats.reduce((a, s) => a + s.stake, 0n);
    const back = reveal.seats.reduce((a, s) => a + s.returned, 0n);
    if (b.before === undefined || b.before === null || b.after === undefined || b.after === null) {
      add("balance", false, "(not seen here)", "", false);
    } else {
      const expected = big(b.before) - (staked - big(b.debited || 0)) + back;
      add("balance", big(b.after) === expected, `${b.before} → ${b.after}`, `${b.before} → ${expected}`);
    }

    // Every transcript the page received belongs to this round's chain, in order, and the
    // last one is the transcript the reveal settles.
    const got = (record.transcripts || []).filter(Boolean);
    if (!got.length) {
      add("transcripts", false, "(none received)", reveal.transcript);
    } else {
      const chain = await transcriptChain(reveal);
      let at = 0, inOrder = true;
      for (const t of got) {
        const k = chain.indexOf(t, at);
        if (k < 0) { inOrder = false; break; }
        at = k;
      }
      const last = got[got.length - 1];
      add("transcripts", inOrder && got[0] === chain[0] && last === reveal.transcript,
        got.join(" → "), chain.join(" → "));
    }
  }

  const failed = checks.filter((c) => c.seen && !c.ok).map((c) => c.field);
  const passed = checks.filter((c) => c.ok).map((c) => c.field);
  const unseen = checks.filter((c) => !c.seen).map((c) => c.field);
  return { ok: failed.length === 0 && result.verdict === "verified", checks, failed, passed, unseen };
}

// The record of a round as a page that saw it only afterwards (the history page) has it:
// the platform's stored round and whatever this browser kept of its own record.
export function recordFromStored(round, kept) {
  // As the history row displays it: each seat of a several-seat round, else the round's fields.
  const seats = round.seats && round.seats.length > 1 ? round.seats : [{
    bet: round.bet, decision: round.decision, stake: round.stake, outcome: round.outcome, returned: round.returned,
  }];
  return {
    commitment: kept?.commitment ?? round.commitment,
    rules_digest: kept?.rules_digest ?? round.rules_digest ?? undefined,
    seats: kept?.seats ?? seats.map((s) => ({ bet: s.bet, action: s.decision === "default" ? null : s.decision ?? null })),
    transcripts: kept?.transcripts ?? round.transcripts ?? [],
    shown: { cards: round.cards || [], hand_class: round.hand_class, spread: round.spread, seats },
    balance: kept?.balance ?? {},
  };
}

export { FIELD_WORDS };
