// A malformed reveal, record, public key or signature reads in the player's language: each
// error of a "malformed" verdict (demo/static/verify.js) carries its catalogue form in
// `says` ([key, params], beside the English `errors`), and i18n.js `malformedTexts` renders
// it. The corpus below mutates a genuine reveal of tests/vectors/reveal-v3.json once per
// rule; it must exercise every m_* key of the catalogue, and nothing else.
//   node --test demo/js/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";
import * as V from "../static/verify.js";
import { CATALOGUES, hasKey, setLang, malformedTexts, t } from "../static/i18n.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const vectors = path.join(root, "tests/vectors");
const v3 = JSON.parse(readFileSync(path.join(vectors, "reveal-v3.json"), "utf8"));
// A spread (2s As 7h) with three Decide steps, seven seats, seat 6 standing by default.
const TEXT = v3.cases.find((c) => c.name === "7-seats/three-steps/one-stands-by-default").reveal;
const receipt = JSON.parse(readFileSync(path.join(vectors, "receipt-v1.json"), "utf8")).cases[0];

// The reveal as plain objects with BigInt integers (the strict parser's reading), and back.
const plain = (v) => (v instanceof Map ? Object.fromEntries([...v].map(([k, x]) => [k, plain(x)]))
  : Array.isArray(v) ? v.map(plain) : v);
const toJson = (v) => (typeof v === "bigint" ? v.toString() : Array.isArray(v) ? `[${v.map(toJson).join(",")}]`
  : v && typeof v === "object" ? `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${toJson(x)}`).join(",")}}`
  : JSON.stringify(v));
const BASE = plain(V.parseStrictJson(TEXT));
const mutate = (change) => { const o = structuredClone(BASE); change(o); return toJson(o); };
const V1_KEYS = ["algorithm", "server_seed", "commitment", "client_seed", "nonce", "decks", "cards"];
const v1 = (change) => {
  const o = Object.fromEntries(V1_KEYS.map((k) => [k, structuredClone(BASE[k])]));
  change(o);
  return toJson(o);
};

// [name, the key it must name, () => the verifier's answer]
const reveal = (text, record) => () => V.verifyReveal(text, record);
const record = (r) => () => V.verifyReveal(TEXT, r);
const CORPUS = [
  // Text and JSON syntax.
  ["a number, not text", "m_not_text", reveal(42)],
  ["bytes that are not UTF-8", "m_json_utf8", reveal(Uint8Array.of(0x7b, 0xff, 0x7d))],
  ["a byte-order mark", "m_json_bom", reveal(`\ufeff${TEXT}`)],
  ["no ':' after a key", "m_json_syntax", reveal(TEXT.replace('"nonce":', '"nonce"'))],
  ["a bare word", "m_json_syntax", reveal(TEXT.replace('"decks":1', '"decks":one'))],
  ["a trailing comma in an object", "m_json_syntax", reveal(TEXT.replace(/\}$/, ",}"))],
  ["a missing comma in an array", "m_json_syntax", reveal(TEXT.replace('"2s","As"', '"2s" "As"'))],
  ["a lone minus sign", "m_json_syntax", reveal(TEXT.replace('"nonce":105', '"nonce":-'))],
  ["an unterminated string", "m_json_string", reveal(TEXT.slice(0, 20))],
  ["a control character in a string", "m_json_string", reveal(TEXT.replace("table of seven", "table\tof seven"))],
  ["a bad escape", "m_json_string", reveal(TEXT.replace("table of seven", "table\\q"))],
  ["a bad \\u escape", "m_json_string", reveal(TEXT.replace("table of seven", "table\\u12"))],
  ["a raw lone surrogate", "m_json_surrogate", reveal(TEXT.replace("table of seven", "table \ud800"))],
  ["an escaped lone surrogate", "m_json_surrogate", reveal(TEXT.replace("table of seven", "table \\ud800"))],
  ["a duplicate key", "m_json_duplicate", reveal(TEXT.replace('"decks":1,', '"decks":1,"decks":1,'))],
  ["nested too deeply", "m_json_depth", reveal(TEXT.replace('"decks":1', `"decks":${"[".repeat(40)}${"]".repeat(40)}`))],
  ["trailing characters", "m_json_trailing", reveal(`${TEXT} x`)],
  // The reveal's shape.
  ["an array, not an object", "m_reveal_not_object", reveal("[]")],
  ["a key missing", "m_reveal_missing_key", reveal(mutate((o) => { delete o.transcript; }))],
  ["a v1 key missing", "m_reveal_missing_key", reveal(v1((o) => { delete o.cards; }))],
  ["an unknown key", "m_reveal_unknown_key", reveal(mutate((o) => { o.extra = 1n; }))],
  ["a paytable key missing", "m_missing_key", reveal(mutate((o) => { delete o.paytable.three_of_a_kind; }))],
  ["an unknown seat key", "m_unknown_key", reveal(mutate((o) => { o.seats[0].tip = 1n; }))],
  ["a paytable that is a number", "m_not_object", reveal(mutate((o) => { o.paytable = 1n; }))],
  ["a decision that is a string", "m_not_object", reveal(mutate((o) => { o.decisions[0][0] = "0:stand"; }))],
  // Values.
  ["cards as a string", "m_not_array", reveal(mutate((o) => { o.cards = "2s As 7h"; }))],
  ["decisions as a number", "m_not_array", reveal(mutate((o) => { o.decisions = 1n; }))],
  ["a table id that is a number", "m_not_string", reveal(mutate((o) => { o.table_id = 5n; }))],
  ["raised as 1", "m_not_boolean", reveal(mutate((o) => { o.seats[0].raised = 1n; }))],
  ["a nonce as a string", "m_not_integer", reveal(mutate((o) => { o.nonce = "105"; }))],
  ["a nonce with a fraction", "m_not_integer", reveal(TEXT.replace('"nonce":105', '"nonce":105.0'))],
  ["9 decks", "m_int_range", reveal(mutate((o) => { o.decks = 9n; }))],
  ["odds 0", "m_int_range", reveal(mutate((o) => { o.paytable.spread[3] = 0n; }))],
  ["a maximum bet under the minimum", "m_int_range", reveal(mutate((o) => { o.limits.max_bet = 100n; }))],
  ["a v1 server seed too short", "m_hex64", reveal(v1((o) => { o.server_seed = "abc"; }))],
  ["an upper-case commitment", "m_hex64_lower", reveal(mutate((o) => { o.commitment = o.commitment.toUpperCase(); }))],
  ["a card 1x", "m_not_card", reveal(mutate((o) => { o.cards[0] = "1x"; }))],
  ["one card", "m_card_count", reveal(mutate((o) => { o.cards = ["2s"]; }))],
  ["3 cards on a consecutive hand", "m_cards_consecutive", reveal(mutate((o) => { o.cards = ["7c", "8d", "9h"]; }))],
  ["2 cards on a spread", "m_cards_three", reveal(mutate((o) => { o.cards = ["2s", "As"]; }))],
  ["an unknown format", "m_format", reveal(mutate((o) => { o.format = "reddog-reveal-v9"; }))],
  ["an unknown algorithm", "m_algorithm", reveal(mutate((o) => { o.algorithm = "reddog-deal-v2"; }))],
  ["a table id with a space", "m_table_id", reveal(mutate((o) => { o.table_id = "a b"; }))],
  ["an empty round id", "m_round_id", reveal(mutate((o) => { o.round_id = ""; }))],
  ["a v1 round id with a control character", "m_round_id", reveal(v1((o) => { o.round_id = "r\u0007"; }))],
  ["an empty client seed", "m_client_seed", reveal(mutate((o) => { o.client_seed = ""; }))],
  ["10 odds in the paytable", "m_spread", reveal(mutate((o) => { o.paytable.spread.pop(); }))],
  ["a currency in lower case", "m_currency_code", reveal(mutate((o) => { o.currency.code = "usd"; }))],
  ["no seat", "m_seat_count", reveal(mutate((o) => { o.seats = []; }))],
  // Decisions.
  ["an empty Decide step", "m_step_empty", reveal(mutate((o) => { o.decisions.push([]); }))],
  ["a fold", "m_action", reveal(mutate((o) => { o.decisions[1][0].action = "fold"; }))],
  ["seats out of order in a step", "m_seat_order", reveal(mutate((o) => { o.decisions[0].reverse(); }))],
  ["a seat deciding twice", "m_seat_twice", reveal(mutate((o) => { o.decisions.push([{ seat: 0n, action: "raise" }]); }))],
  ["a decision for a seat not there", "m_no_seat", reveal(mutate((o) => { o.seats = o.seats.slice(0, 5); }))],
  ["decisions on a consecutive hand", "m_decisions_not_needed", reveal(mutate((o) => { o.cards = ["7c", "8d"]; }))],
  // The player's record.
  ["an unknown record key", "m_record_unknown_key", record({ player: "x" })],
  ["a nonce with a leading zero", "m_record_integer", record({ nonce: "007" })],
  ["a nonce with a sign", "m_record_integer", record({ nonce: "+7" })],
  ["decks 9 in the record", "m_int_range", record({ decks: "9" })],
  ["a record transcript too short", "m_hex64", record({ transcript: "abc" })],
  ["a record table id that is a number", "m_not_string", record({ table_id: 7 })],
  ["8 bets", "m_amount_count", record({ bets: "1,2,3,4,5,6,7,8" })],
  ["a bet after a trailing comma", "m_record_integer", record({ bets: "500," })],
  ["a call without a colon", "m_record_decision", record({ decisions: "0raise" })],
  ["decisions as a number in the record", "m_decide_calls", record({ decisions: 5 })],
  ["an empty call in the record", "m_step_empty", record({ decisions: [[{ seat: 0, action: "raise" }], []] })],
  ["an empty call in the record's text form", "m_record_decision", record({ decisions: "0:raise;" })],
  ["a fold in the record", "m_action", record({ decisions: "0:fold" })],
  ["a decision without its action", "m_seat_action", record({ decisions: [[{ seat: 0 }]] })],
  // Signed receipts.
  ["a public key too short", "m_public_key", () => V.verifyReceipt(receipt.reveal, receipt.public_key.slice(2), receipt.signature)],
  ["a signature too short", "m_signature", () => V.verifyReceipt(receipt.reveal, receipt.public_key, receipt.signature.slice(2))],
];

const mKeys = Object.keys(CATALOGUES.en).filter((k) => k.startsWith("m_")).sort();

test("every malformed input names its catalogue key, beside the English error", async () => {
  const seen = new Set();
  for (const [name, key, run] of CORPUS) {
    const r = await run();
    assert.equal(r.verdict, "malformed", `${name}: ${r.errors}`);
    assert.equal(r.errors.length, 1, name);
    assert.equal(r.says?.length, r.errors.length, `${name}: one say per error`);
    const [say] = r.says;
    assert.ok(Array.isArray(say) && hasKey(say[0]), `${name}: ${JSON.stringify(say?.[0])} is a catalogue key`);
    assert.equal(say[0], key, `${name}: ${r.errors[0]}`);
    seen.add(say[0]);
  }
  // Every m_* key is exercised, and every key the verifier names is an m_* key.
  assert.deepEqual([...seen].sort(), mKeys);
});

test("in each language every malformed error is rendered, every placeholder filled", async () => {
  const results = [];
  for (const [name, , run] of CORPUS) results.push([name, await run()]);
  try {
    setLang("en");
    const english = results.map(([, r]) => malformedTexts(r)[0]);
    for (const lang of Object.keys(CATALOGUES)) {
      setLang(lang);
      results.forEach(([name, r], k) => {
        const text = malformedTexts(r)[0];
        assert.ok(text && !/\{\w+\}/.test(text), `${lang} ${name}: ${text}`);
        if (lang !== "en") {
          assert.notEqual(text, english[k], `${lang} ${name} is still English`);
          assert.notEqual(text, r.errors[0], `${lang} ${name} is still the verifier's English`);
        }
      });
      // The frame around it is the language's too.
      assert.ok(t("malformed", { errors: malformedTexts(results[0][1]).join("; ") }).includes(malformedTexts(results[0][1])[0]));
    }
  } finally {
    setLang("en");
  }
});

test("field names, paths and values stay as the reveal writes them", async () => {
  try {
    const seat = await reveal(mutate((o) => { o.seats[2].raised = "yes"; }))();
    const key = await reveal(mutate((o) => { o.extra_key = 1n; }))();
    for (const lang of Object.keys(CATALOGUES)) {
      setLang(lang);
      assert.ok(malformedTexts(seat)[0].includes("seats[2].raised"), `${lang}: ${malformedTexts(seat)[0]}`);
      assert.ok(malformedTexts(key)[0].includes('"extra_key"'), `${lang}: ${malformedTexts(key)[0]}`);
    }
    setLang("ja");
    assert.equal(malformedTexts(seat)[0], "seats[2].raised は true か false でなければなりません");
    setLang("de");
    assert.equal(malformedTexts(key)[0], 'die Offenlegung hat einen unbekannten Schlüssel "extra_key"');
  } finally {
    setLang("en");
  }
});

test("the English errors are unchanged", async () => {
  const dup = TEXT.replace('"decks":1,', '"decks":1,"decks":1,');
  const offset = dup.indexOf('"decks"', dup.indexOf('"decks"') + 1) + '"decks"'.length;
  const cases = [
    [reveal(dup), `duplicate key "decks" at offset ${offset}`],
    [reveal(mutate((o) => { delete o.transcript; })), 'reveal: missing key "transcript"'],
    [reveal(mutate((o) => { o.seats[2].raised = "yes"; })), "seats[2].raised must be true or false"],
    [reveal(mutate((o) => { o.decks = 9n; })), "decks must be within 1 … 8"],
    [reveal(mutate((o) => { o.commitment = o.commitment.toUpperCase(); })), "commitment must be 64 lower-case hex digits"],
    [reveal(mutate((o) => { o.decisions.push([{ seat: 0n, action: "raise" }]); })), "decisions: seat 0 decides twice"],
    [record({ nonce: "007" }), 'record.nonce: "007" is not a decimal integer without sign or leading zero'],
    [record({ decisions: [[{ seat: 0 }]] }), 'record.decisions[0][0] must be exactly {"seat","action"}'],
    [() => V.verifyReceipt(receipt.reveal, "abc", receipt.signature), "public key: must be 64 hexadecimal digits"],
  ];
  for (const [run, want] of cases) assert.deepEqual((await run()).errors, [want]);
});

test("an error without a catalogue form reads as the verifier wrote it", () => {
  assert.deepEqual(malformedTexts({ verdict: "malformed", errors: ["a", "b", "c"], says: [["m_no_such_key"], undefined] }),
    ["a", "b", "c"]);
  assert.deepEqual(malformedTexts({ verdict: "malformed", errors: ["a"] }), ["a"]);
});
