// The browser's verifier (demo/static/verify.js), run in node against the engine's test
// vectors: tests/vectors/deal-v1.json always; the reveal-v2 vectors and the negative
// vectors (tests/vectors/reveal-*.json) whenever the repository has them.
//   node --test demo/js/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, existsSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";
import * as V from "../static/verify.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const vectors = path.join(root, "tests/vectors");
// Read with the strict parser itself: a nonce of 2^64-1 must not pass through a double.
const plain = (v) => v instanceof Map ? Object.fromEntries([...v].map(([k, x]) => [k, plain(x)]))
  : Array.isArray(v) ? v.map(plain) : typeof v === "bigint" && v <= 2n ** 53n ? Number(v) : v;
const deal = plain(V.parseStrictJson(readFileSync(path.join(vectors, "deal-v1.json"), "utf8")));
const te = new TextEncoder();

test("ChaCha20 block: RFC 8439 zero key keystream starts 76b8e0ad…", () => {
  const bytes = V.chacha20BlockBytes(new Uint8Array(32), 0);
  assert.equal(V.bytesToHex(bytes).slice(0, 32), "76b8e0ada0f13d90405d6ae55386bd28");
});

test(`deal-v1.json: all ${deal.cases.length} cases (commitment, HMAC message, key, block 0, 20 cards, rejections)`, async () => {
  assert.ok(deal.cases.length >= 26);
  for (const c of deal.cases) {
    const seed = V.hexToBytes(c.server_seed);
    const clientSeed = te.encode(c.client_seed);
    assert.equal(V.bytesToHex(clientSeed), c.client_seed_hex, c.name);
    assert.equal(V.bytesToHex(await V.sha256(seed)), c.commitment, c.name);
    const nonce = BigInt(c.nonce);
    assert.equal(V.bytesToHex(V.dealMessage(clientSeed, nonce, c.decks)), c.hmac_message, c.name);
    const d = await V.deal(seed, clientSeed, nonce, c.decks, 20);
    assert.equal(V.bytesToHex(d.key), c.key, c.name);
    assert.equal(V.bytesToHex(V.chacha20BlockBytes(d.key, 0)), c.keystream_block0, c.name);
    assert.deepEqual(d.codes, c.codes, c.name);
    assert.deepEqual(d.codes.map(V.cardText), c.cards, c.name);
    assert.equal(d.rejected, c.rejected_words, c.name);
  }
});

test("the nonce 2^64-1 survives parsing (BigInt), and is not rounded", () => {
  const m = V.parseStrictJson('{"nonce":18446744073709551615}');
  assert.equal(m.get("nonce"), 18446744073709551615n);
});

test("deal-v1 cases as v1 reveals verify; a changed card, seed or commitment does not", async () => {
  for (const c of deal.cases) {
    const n = V.handClass(c.cards.slice(0, 2)).kind === "consecutive" ? 2 : 3;
    // Skip shoes whose first cards would be refused as impossible (never for real deals).
    const reveal = `{"algorithm":"reddog-deal-v1","server_seed":"${c.server_seed}","commitment":"${c.commitment}",` +
      `"client_seed":${JSON.stringify(c.client_seed)},"nonce":${BigInt(c.nonce)},"decks":${c.decks},` +
      `"cards":${JSON.stringify(c.cards.slice(0, n))}}`;
    const ok = await V.verifyReveal(reveal, { commitment: c.commitment, nonce: String(c.nonce), client_seed: c.client_seed, decks: c.decks });
    // A v1 reveal cannot confirm a table id.
    assert.equal((await V.verifyReveal(reveal, { table_id: "default" })).verdict, "not_verified", c.name);
    assert.equal(ok.verdict, "verified", `${c.name}: ${ok.errors}`);
    const other = c.cards.slice(n).find((x) => x !== c.cards[n - 1]);
    const tampered = reveal.replace(JSON.stringify(c.cards.slice(0, n)), JSON.stringify([...c.cards.slice(0, n - 1), other]));
    const r2 = await V.verifyReveal(tampered);
    assert.notEqual(r2.verdict, "verified", c.name);
    // Expected values shown before the deal must match.
    const r3 = await V.verifyReveal(reveal, { nonce: "12345678" });
    assert.equal(r3.verdict, "not_verified", c.name);
  }
});

test("strict JSON: duplicate keys, non-integers, lone surrogates, trailing data, BOM are refused", () => {
  for (const bad of ['{"a":1,"a":1}', '{"a":1.0}', '{"a":1e3}', '{"a":-1}', '{"a":01}', '{"a":"\\ud800"}', '{"a":1} x',
    '\ufeff{"a":1}', '{"a":"\u0001"}', "{'a':1}", '{"a":1,}', "[1,]", '{"a":tru}']) {
    let r;
    try { r = V.parseStrictJson(bad); } catch (e) { assert.ok(e instanceof V.MalformedError, bad); continue; }
    // Non-integers parse as NonInteger (refused later by the grammar), never as numbers.
    assert.ok(r.get("a") instanceof V.NonInteger, `${bad} parsed as ${r.get("a")}`);
  }
  assert.equal(V.parseStrictJson('"\\ud83c\\udfb2"'), "🎲");
  assert.deepEqual(V.parseStrictJson("[0, 1, 18446744073709551616]"), [0n, 1n, 18446744073709551616n]);
});

test("payouts by the rules: pair, trips, consecutive, win by spread, loss", () => {
  const pt = { spread: [5n, 4n, 2n, 1n, 1n, 1n, 1n, 1n, 1n, 1n, 1n], three_of_a_kind: 11n };
  assert.deepEqual(V.seatReturn(["7c", "7d", "7h"], 500n, pt).returned, 6000n);
  assert.deepEqual(V.seatReturn(["7c", "7d", "9h"], 500n, pt).returned, 500n);
  assert.deepEqual(V.seatReturn(["7c", "8d"], 500n, pt).returned, 500n);
  assert.deepEqual(V.seatReturn(["5c", "7d", "6h"], 500n, pt).returned, 3000n); // spread 1 pays 5:1
  assert.deepEqual(V.seatReturn(["2c", "Ad", "8h"], 1000n, pt).returned, 2000n); // spread 11 pays 1:1
  assert.deepEqual(V.seatReturn(["2c", "Ad", "Ah"], 1000n, pt).returned, 0n); // matches an end: lost
  assert.deepEqual(V.seatReturn(["4c", "9d", "Kh"], 1000n, pt).returned, 0n); // outside: lost
});

// Reveal vector files (tests/vectors/reveal*.json): every case found is checked. A case gives
// its reveal as text (`reveal` or `reveal_json`) or as a JSON object, optional expectations
// (`expect`), and its verdict (`verdict`: verified / not_verified / malformed, or an `exit`
// status 0/1/2); a case without either is a genuine reveal and must verify.
const toJson = (v) => typeof v === "bigint" ? v.toString() : Array.isArray(v) ? `[${v.map(toJson).join(",")}]`
  : v && typeof v === "object" ? `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${toJson(x)}`).join(",")}}`
  : JSON.stringify(v);
const extra = existsSync(vectors) ? readdirSync(vectors).filter((f) => /^reveal.*\.json$/.test(f)) : [];
for (const f of extra) {
  test(`vectors ${f}`, async () => {
    const doc = plain(V.parseStrictJson(readFileSync(path.join(vectors, f), "utf8")));
    const cases = doc.cases ?? doc.vectors ?? [];
    assert.ok(cases.length > 0, `${f} has no cases`);
    for (const c of cases) {
      const raw = c.reveal_json ?? c.reveal;
      const text = typeof raw === "string" ? raw : toJson(raw);
      const r = await V.verifyReveal(text, c.expect ?? {});
      const want = c.verdict ?? (c.exit === 1 ? "not_verified" : c.exit === 2 ? "malformed" : "verified");
      assert.equal(r.verdict, String(want).toLowerCase(), `${f}/${c.name}: ${r.errors}`);
      // Where a vector publishes the transcript's intermediate values, they match too.
      if (c.t0_preimage_hex) assert.equal(V.bytesToHex(V.transcriptStartPreimage(r.reveal)), c.t0_preimage_hex, `${c.name}: t_0 preimage`);
      if (c.transcript_chain) assert.deepEqual(await V.transcriptChain(r.reveal), c.transcript_chain, `${c.name}: chain`);
    }
  });
}

test("v2 reveal: grammar, payouts and transcript; every tampering is caught", async () => {
  const c = deal.cases.find((x) => x.name === "1-deck/ascii-client/nonce-0");
  assert.deepEqual(c.cards.slice(0, 3), ["Jd", "6h", "6d"]); // spread 4; 6d matches an end: lost
  const base = {
    format: "reddog-reveal-v2", algorithm: "reddog-deal-v1", server_seed: c.server_seed, commitment: c.commitment,
    table_id: "default", round_id: "r-1", client_seed: c.client_seed, nonce: 0n, decks: 1n, cards: ["Jd", "6h", "6d"],
    paytable: { spread: [5n, 4n, 2n, 1n, 1n, 1n, 1n, 1n, 1n, 1n, 1n], three_of_a_kind: 11n },
    decisions: [[{ seat: 0n, action: "raise" }], [{ seat: 1n, action: "stand" }]],
    seats: [{ bet: 500n, raised: true, stake: 1000n, returned: 0n }, { bet: 700n, raised: false, stake: 700n, returned: 0n }],
  };
  base.transcript = await V.transcriptHash(base);
  // Serialise with BigInt as bare integers, in the engine's key order.
  const text = (o) => JSON.stringify(o, (k, v) => (typeof v === "bigint" ? `#${v}#` : v)).replace(/"#(\d+)#"/g, "$1");
  const ok = await V.verifyReveal(text(base), { commitment: c.commitment, nonce: "0", round_id: "r-1", table_id: "default", decks: 1, client_seed: c.client_seed });
  assert.equal(ok.verdict, "verified", ok.errors.join("; "));
  const cases = [
    ["returned changed", (o) => { o.seats[1].returned = 700n; }, "not_verified"],
    ["stake without the raise", (o) => { o.seats[0].stake = 500n; }, "not_verified"],
    ["raised flag flipped", (o) => { o.seats[1].raised = true; }, "not_verified"],
    ["a decision removed (transcript and raise)", (o) => { o.decisions = [o.decisions[1]]; }, "not_verified"],
    ["transcript changed", (o) => { o.transcript = "0".repeat(64); }, "not_verified"],
    ["paytable changed (transcript)", (o) => { o.paytable.spread[3] = 2n; }, "not_verified"],
    ["bet changed (transcript)", (o) => { o.seats[1].bet = 700n; o.seats[1].stake = 700n; o.round_id = "r-2"; }, "not_verified"],
    ["third card changed", (o) => { o.cards[2] = "8c"; }, "not_verified"],
    ["server seed changed", (o) => { o.server_seed = "1" + o.server_seed.slice(1); }, "not_verified"],
    ["upper-case hex", (o) => { o.commitment = o.commitment.toUpperCase(); }, "malformed"],
    ["unknown key", (o) => { o.extra = 1n; }, "malformed"],
    ["missing key", (o) => { delete o.transcript; }, "malformed"],
    ["seat decides twice", (o) => { o.decisions.push([{ seat: 0n, action: "stand" }]); }, "malformed"],
    ["empty decide step", (o) => { o.decisions.push([]); }, "malformed"],
    ["decision for a missing seat", (o) => { o.decisions[1][0].seat = 2n; }, "malformed"],
    ["3 cards on a consecutive hand", (o) => { o.cards = ["7c", "8d", "9h"]; }, "malformed"],
    ["2 cards on a spread", (o) => { o.cards = ["Jd", "6h"]; }, "malformed"],
    ["odds 0", (o) => { o.paytable.three_of_a_kind = 0n; }, "malformed"],
    ["8 seats", (o) => { while (o.seats.length < 8) o.seats.push({ bet: 1n, raised: false, stake: 1n, returned: 0n }); }, "malformed"],
    ["decks 9", (o) => { o.decks = 9n; }, "malformed"],
    ["empty client seed", (o) => { o.client_seed = ""; }, "malformed"],
    ["bad table id", (o) => { o.table_id = "a b"; }, "malformed"],
  ];
  for (const [name, change, want] of cases) {
    const o = structuredClone(base);
    change(o);
    const r = await V.verifyReveal(text(o));
    assert.equal(r.verdict, want, `${name}: ${r.errors}`);
  }
  // Raw-text tamperings: a duplicate key, a float, a sign.
  const t = text(base);
  assert.equal((await V.verifyReveal(t.replace('"decks":1,', '"decks":1,"decks":1,'))).verdict, "malformed");
  assert.equal((await V.verifyReveal(t.replace('"nonce":0,', '"nonce":0.0,'))).verdict, "malformed");
  assert.equal((await V.verifyReveal(t.replace('"nonce":0,', '"nonce":-0,'))).verdict, "malformed");
  // Another round's reveal: expectations from before the deal catch it.
  const other = await V.verifyReveal(t, { round_id: "r-9" });
  assert.equal(other.verdict, "not_verified");
});

// The player's record (FAIRNESS.md 4.5): finding 1's forged reveal verifies alone and is
// refused given the last transcript the player was shown, their decisions, the amount
// credited or the rules digest; records in the text forms of the CLI options are read the
// same way, and a record not in that form is malformed.
test("a forged reveal with a recomputed transcript is refused given the player's record", async () => {
  const negative = plain(V.parseStrictJson(readFileSync(path.join(vectors, "reveal-negative.json"), "utf8")));
  const byName = (n) => negative.cases.find((c) => c.name === n);
  for (const format of ["v2", "v3"]) {
    const whole = byName(`forged/${format}/given-the-players-whole-record`);
    assert.equal((await V.verifyReveal(whole.reveal)).verdict, "verified", `${format}: the forgery verifies alone`);
    const record = whole.expect;
    const given = [
      { transcript: record.transcript },
      { transcript: record.transcript.toUpperCase() },
      { decisions: "0:raise" },
      { decisions: [[{ seat: 0, action: "raise" }]] },
      { returned: "4000" },
      { returned: [4000] },
      record,
    ];
    if (format === "v3") given.push({ rules_digest: record.rules_digest });
    for (const r of given) {
      assert.equal((await V.verifyReveal(whole.reveal, r)).verdict, "not_verified", `${format} ${JSON.stringify(r)}`);
    }
  }
});

test("the player's record: text forms as in the CLI, malformed otherwise", async () => {
  const doc = plain(V.parseStrictJson(readFileSync(path.join(vectors, "reveal-v3.json"), "utf8")));
  const c = doc.cases.find((x) => x.name === "7-seats/three-steps/one-stands-by-default");
  const r = V.parseReveal(c.reveal);
  const record = {
    transcript: r.transcript, rules_digest: r.rules_digest, nonce: String(r.nonce), decks: "1",
    bets: r.seats.map((s) => s.bet).join(","), returned: r.seats.map((s) => s.returned).join(","),
    decisions: "0:stand,3:raise;1:raise;2:raise,4:raise,5:stand",
  };
  const ok = await V.verifyReveal(c.reveal, record);
  assert.equal(ok.verdict, "verified", ok.errors.join("; "));
  assert.equal((await V.verifyReveal(c.reveal, { ...record, decisions: "0:stand,3:raise;1:raise;2:raise,4:raise" })).verdict, "not_verified");
  for (const bad of [{ nonce: "007" }, { nonce: "+7" }, { decks: "01" }, { bets: "500," }, { bets: "+500" },
    { returned: "1 2" }, { decisions: "0:fold" }, { decisions: "0:raise;" }, { decisions: "00:raise" },
    { decisions: "7:raise" }, { transcript: "abc" }, { rules_digest: "zz" }, { player: "x" }]) {
    assert.equal((await V.verifyReveal(c.reveal, bad)).verdict, "malformed", JSON.stringify(bad));
  }
});

// Signed receipts (docs/FAIRNESS.md 4.7): every case of tests/vectors/receipt-v1.json and
// receipt-v2.json gets its verdict from verifySigned given the case's public key, key id,
// Settle signature, receipts, trusted keys and allowUntrusted — the same answers as `reddog
// verify` and verify.py.
export async function receiptCaseVerdict(V, c) {
  if (!c.signature && !c.receipts.length) return "malformed";
  const got = await V.verifySigned(c.reveal, { publicKey: c.public_key, signature: c.signature || undefined,
    keyId: c.key_id || undefined, receipts: c.receipts,
    trustedKeys: c.trusted_keys === null ? undefined : JSON.stringify(c.trusted_keys), allowUntrusted: c.allow_untrusted });
  return got.verdict;
}
for (const name of ["receipt-v1.json", "receipt-v2.json"]) {
  const file = path.join(vectors, name);
  if (!existsSync(file)) continue;
  test(`${name}: every signed-receipt case gets its verdict`, async () => {
    const doc = JSON.parse(readFileSync(file, "utf8"));
    assert.ok(doc.cases.length >= 18);
    for (const c of doc.cases) {
      assert.equal(await receiptCaseVerdict(V, c), c.verdict, c.name);
    }
    const honest = doc.cases.find((c) => c.name === "step/honest-with-the-decide-receipt");
    assert.equal(V.bytesToHex(V.stepMessage(V.parseStepReceipt(honest.receipts[0]))), doc.step_message_hex);
    const commit = { kind: "commit", version: doc.receipt_version, signing_key_id: doc.key_id, ...doc.commit,
      nonce: BigInt(doc.commit.nonce), decks: BigInt(doc.commit.decks), expires_at_unix_ms: BigInt(doc.commit.expires_at_unix_ms) };
    assert.equal(V.bytesToHex(V.commitMessage(commit)), doc.commit.message_hex);
  });
}

test("receipt-v2.json: trust, key ids and what a signature alone proves", async () => {
  const doc = JSON.parse(readFileSync(path.join(vectors, "receipt-v2.json"), "utf8"));
  const c = Object.fromEntries(doc.cases.map((x) => [x.name, x]));
  const honest = c["step/honest-with-the-decide-receipt"];
  const trusted = JSON.stringify([{ key_id: "s1", algorithm: "ed25519", public_key_hex: doc.public_key }]);
  const ok = await V.verifySigned(honest.reveal, { publicKey: doc.public_key, receipts: honest.receipts, trustedKeys: trusted });
  assert.equal(ok.verdict, "verified", ok.errors.join("; "));
  assert.deepEqual([ok.key.source, ok.key.key_id], ["trusted", "s1"]);
  assert.equal(ok.key.fingerprint, V.bytesToHex(await V.sha256(V.hexToBytes(doc.public_key))));
  const untrusted = await V.verifySigned(honest.reveal, { publicKey: doc.public_key, signature: honest.signature, keyId: "s1" });
  assert.equal(untrusted.verdict, "not_verified", "no trusted keys: not verified");
  const allowed = await V.verifySigned(honest.reveal, { publicKey: doc.public_key, signature: honest.signature, keyId: "s1", allowUntrusted: true });
  assert.equal(allowed.verdict, "verified");
  assert.equal(allowed.key.source, "untrusted");
  assert.match(allowed.note, /not that it is the round played/);
  const nothing = await V.verifySigned(honest.reveal, { publicKey: doc.public_key, trustedKeys: trusted });
  assert.equal(nothing.verdict, "malformed", "a public key alone checks nothing");
  const leak = await V.verifySigned(c["step/start-receipt-naming-the-face-down-card"].reveal,
    { publicKey: doc.public_key, receipts: c["step/start-receipt-naming-the-face-down-card"].receipts, trustedKeys: trusted });
  assert.ok(leak.errors.some((e) => e.includes("leaked the face-down card")), leak.errors.join("; "));
});

// The Ed25519 edge vectors (tests/vectors/ed25519/README.md): the strict rule in front of
// node's WebCrypto gives every vector its verdict.
test("ed25519 edge vectors: C2SP/CCTV (914) and speccheck (12) under the strict rule", async () => {
  const cctv = JSON.parse(readFileSync(path.join(vectors, "ed25519/cctv-ed25519vectors.json"), "utf8"));
  assert.equal(cctv.length, 914);
  const allowed = new Set(["low_order_component_A", "low_order_component_R"]);
  let accepted = 0;
  for (const v of cctv) {
    const want = (v.flags || []).every((f) => allowed.has(f));
    const got = await V.ed25519Verify(v.key, v.sig, te.encode(v.msg));
    assert.equal(got, want, `cctv ${v.number} ${v.flags}`);
    accepted += got ? 1 : 0;
  }
  assert.ok(accepted > 0 && accepted < 914);
  const spec = JSON.parse(readFileSync(path.join(vectors, "ed25519/speccheck-cases.json"), "utf8"));
  assert.equal(spec.length, 12);
  for (const [i, c] of spec.entries()) {
    assert.equal(await V.ed25519Verify(c.pub_key, c.signature, V.hexToBytes(c.message)), i === 3, `speccheck ${i}`);
  }
});

// The player's record: the seats of one Decide call in any order (calls in order); hex in
// either case.
test("record: seats within a call in any order, hex in either case", async () => {
  const doc = JSON.parse(readFileSync(path.join(vectors, "reveal-v3.json"), "utf8"));
  const c = doc.cases.find((x) => x.name === "7-seats/three-steps/one-stands-by-default");
  const r = JSON.parse(c.reveal);
  const ok = await V.verifyReveal(c.reveal, { decisions: "3:raise,0:stand;1:raise;5:stand,2:raise,4:raise", transcript: r.transcript.toUpperCase() });
  assert.equal(ok.verdict, "verified", ok.errors.join("; "));
  const swapped = await V.verifyReveal(c.reveal, { decisions: "1:raise;3:raise,0:stand;5:stand,2:raise,4:raise" });
  assert.equal(swapped.verdict, "not_verified");
});
