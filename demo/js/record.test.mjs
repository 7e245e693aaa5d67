// The player's record against the reveal (demo/static/record.js), in node, over every
// reveal-v2 vector: the record a faithful page would keep passes; each displayed field
// altered alone (a card, the outcome, a credited amount, a stake, the decision, a bet, the
// balance, a transcript, the commitment) fails and is named, while the reveal itself still
// verifies.
//   node --test demo/js/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";
import * as V from "../static/verify.js";
import { checkRecord, describeField, recordFromStored } from "../static/record.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const vectors = JSON.parse(readFileSync(path.join(root, "tests/vectors/reveal-v2.json"), "utf8"));

// What a faithful page shows and keeps for a verified reveal.
async function faithfulRecord(text) {
  const result = await V.verifyReveal(text);
  const r = result.reveal;
  const decided = new Map();
  for (const step of r.decisions) for (const d of step) decided.set(Number(d.seat), d.action);
  const chain = await V.transcriptChain(r);
  const staked = r.seats.reduce((a, s) => a + s.stake, 0n);
  const back = r.seats.reduce((a, s) => a + s.returned, 0n);
  const before = 10_000_000n;
  const h = V.handClass(r.cards);
  return {
    result,
    record: {
      commitment: r.commitment,
      seats: r.seats.map((s, k) => ({ bet: String(s.bet), action: decided.get(k) ?? null })),
      transcripts: chain,
      shown: {
        cards: [...r.cards], hand_class: h.kind, spread: h.spread,
        seats: r.seats.map((s, k) => ({ outcome: result.seats[k].outcome, decision: decided.get(k) ?? null,
          stake: String(s.stake), returned: String(s.returned) })),
      },
      balance: { before: String(before), debited: 0, after: String(before - staked + back) },
    },
  };
}

const clone = (x) => JSON.parse(JSON.stringify(x));
const otherCard = (c) => (c === "As" ? "Ks" : "As");

test("a faithful page's record of every reveal-v2 vector matches its reveal", async () => {
  for (const c of vectors.cases.filter((x) => x.verdict === "verified")) {
    const { result, record } = await faithfulRecord(c.reveal);
    assert.equal(result.verdict, "verified", c.name);
    const rec = await checkRecord(result, record);
    assert.deepEqual(rec.failed, [], `${c.name}: ${JSON.stringify(rec.checks.filter((x) => !x.ok))}`);
    assert.equal(rec.ok, true, c.name);
    assert.ok(rec.passed.includes("cards") && rec.passed.includes("balance") && rec.passed.includes("transcripts"), c.name);
  }
});

test("each displayed field altered alone is named as the mismatch, the reveal still verifying", async () => {
  const tamperings = {
    cards: (r) => { r.shown.cards[0] = otherCard(r.shown.cards[0]); },
    "seat0.outcome": (r) => { r.shown.seats[0].outcome = r.shown.seats[0].outcome === "lose" ? "win" : "lose"; },
    "seat0.returned": (r) => { r.shown.seats[0].returned = String(BigInt(r.shown.seats[0].returned) + 1000n); },
    "seat0.stake": (r) => { r.shown.seats[0].stake = String(BigInt(r.shown.seats[0].stake) + 1n); },
    "seat0.bet": (r) => { r.seats[0].bet = String(BigInt(r.seats[0].bet) + 100n); },
    "seat0.decision": (r) => { r.seats[0].action = r.seats[0].action === "raise" ? "stand" : "raise"; },
    balance: (r) => { r.balance.after = String(BigInt(r.balance.after) - 1000n); },
    transcripts: (r) => { r.transcripts[r.transcripts.length - 1] = "0".repeat(64); },
    commitment: (r) => { r.commitment = "f".repeat(64); },
    seats: (r) => { r.seats.push({ bet: "500", action: null }); },
  };
  for (const c of vectors.cases.filter((x) => x.verdict === "verified")) {
    const { result, record } = await faithfulRecord(c.reveal);
    for (const [field, tamper] of Object.entries(tamperings)) {
      const r = clone(record);
      tamper(r);
      const rec = await checkRecord(result, r);
      assert.equal(result.verdict, "verified", `${c.name}: the reveal is untouched`);
      assert.equal(rec.ok, false, `${c.name}: ${field} altered must not verify`);
      assert.ok(rec.failed.includes(field), `${c.name}: ${field} altered, failed ${rec.failed}`);
    }
  }
});

test("a transcript the reveal's chain does not hold, or an earlier one last, is a mismatch", async () => {
  const c = vectors.cases.find((x) => x.transcript_chain.length >= 2);
  const { result, record } = await faithfulRecord(c.reveal);
  const stale = clone(record);
  stale.transcripts = stale.transcripts.slice(0, -1); // the page never saw the settled transcript
  assert.deepEqual((await checkRecord(result, stale)).failed, ["transcripts"]);
  const none = clone(record);
  none.transcripts = [];
  assert.deepEqual((await checkRecord(result, none)).failed, ["transcripts"]);
});

test("an unseen balance is listed as not checked, neither passed nor failed", async () => {
  const { result, record } = await faithfulRecord(vectors.cases[0].reveal);
  const r = clone(record);
  r.balance = {};
  const rec = await checkRecord(result, r);
  assert.equal(rec.ok, true);
  assert.deepEqual(rec.unseen, ["balance"]);
  assert.ok(!rec.passed.includes("balance"));
});

test("a stored round (the history page) is checked the same way", async () => {
  const c = vectors.cases.find((x) => x.name === "1-seat/between/raise");
  const { result, record } = await faithfulRecord(c.reveal);
  const s = record.shown.seats[0];
  const stored = { commitment: record.commitment, cards: record.shown.cards, hand_class: record.shown.hand_class,
    spread: record.shown.spread, bet: Number(record.seats[0].bet), decision: s.decision, stake: Number(s.stake),
    outcome: s.outcome, returned: Number(s.returned), transcripts: record.transcripts };
  assert.equal((await checkRecord(result, recordFromStored(stored, null))).ok, true);
  stored.returned += 1;
  const rec = await checkRecord(result, recordFromStored(stored, null));
  assert.deepEqual(rec.failed, ["seat0.returned"]);
  assert.equal(describeField("seat0.returned"), "seat 1: the amount credited");
});

test("a decision whose request got no answer may have stood by default, and nothing else", async () => {
  const c = vectors.cases.find((x) => x.name === "1-seat/between/stood-by-default");
  const { result, record } = await faithfulRecord(c.reveal);
  const r = clone(record);
  r.seats[0].action = "stand";
  assert.deepEqual((await checkRecord(result, r)).failed, ["seat0.decision"], "a stand the reveal does not hold");
  r.seats[0].unconfirmed = true;
  assert.deepEqual((await checkRecord(result, r)).failed, [], "unanswered: the seat may have stood by default");
  const raised = vectors.cases.find((x) => x.name === "1-seat/between/raise");
  const f = await faithfulRecord(raised.reveal);
  const u = clone(f.record);
  u.seats[0].action = "stand";
  u.seats[0].unconfirmed = true;
  assert.deepEqual((await checkRecord(f.result, u)).failed, ["seat0.decision"], "unanswered stand, yet a raise");
});
