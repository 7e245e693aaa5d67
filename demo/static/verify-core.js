// Red Dog reveal verifier, in the browser and in node: one definition, a plain script so that
// the standalone page verify/web/index.html can load it from file:// (where browsers refuse
// ES modules); it sets globalThis.RedDogVerify. The demo and node import it through
// verify.js, an ES module that re-exports the same functions.
//
// It re-does, with no code of the engine's, everything docs/FAIRNESS.md and
// docs/design/round-integrity.md let a player check:
//   - SHA-256(server_seed) = commitment                       (WebCrypto SHA-256)
//   - the cards are the first cards of deal(server_seed, client_seed, nonce, decks)
//                                                             (WebCrypto HMAC-SHA256 + ChaCha20 below)
//   - v2, v3: each seat's stake and amount returned follow RULES.md with the reveal's
//     paytable, and the transcript hash recomputed from the reveal equals the one revealed
//   - v3: the rules digest recomputed from decks, paytable, limits and currency equals the
//     one revealed, and every bet is within the limits
//   - the reveal is the player's round: it equals the player's record (`record`, FAIRNESS.md
//     4.5) — commitment, nonce, client seed, round id, table id, decks, rules digest, the last
//     transcript shown, bets, decisions and amounts credited, whichever are given.
// Input is parsed by a strict JSON parser: duplicate keys are refused, integers are read as
// BigInt (a nonce can be 2^64 - 1), non-integer numbers are refused.
//
// verifyReveal(text, record) resolves to
//   { verdict: "verified" | "not_verified" | "malformed", format, errors: [..], checks: [..],
//     cards, hand, seats }
// "malformed" = the reveal (or the record) breaks the grammar (exit 2 of the CLI verifiers),
// "not_verified" = well-formed but a check failed (exit 1). A malformed answer also has
// `says`, parallel to `errors`: each error as a catalogue key and its parameters
// ([key, params], like a check's `say`), for a page in another language.

(function (root) {
"use strict";

const subtle = globalThis.crypto && globalThis.crypto.subtle;
const te = new TextEncoder();

const U64_MAX = (1n << 64n) - 1n;
// The largest bet any table allows (a raised win at the largest odds, 10000 to 1, fits in
// 64 bits); a reveal with another bet, or with round totals beyond 2^64 - 1, describes no
// round the engine could have dealt (docs/FAIRNESS.md 4.5, check 3).
const MAX_BET = U64_MAX / (2n * 10001n);
const RANKS = "23456789TJQKA";
const SUITS = "cdhs";

// `say`: the message as a catalogue key and its parameters (demo/static/i18n.js, keys m_*);
// field names, JSON paths and values in the parameters stay as the reveal writes them.
class MalformedError extends Error {
  constructor(message, say) {
    super(message);
    this.say = say;
  }
}

// ---------------------------------------------------------------- strict JSON

// A number that is valid JSON but not a canonical non-negative integer (e.g. -1, 1.0, 1e3,
// 007 is not even JSON). Kept so that validation can name it; never accepted.
class NonInteger {
  constructor(text) { this.text = text; }
}

const MAX_DEPTH = 32;

// Parses JSON text strictly: RFC 8259 syntax, no duplicate keys, no lone surrogates, no
// byte-order mark; canonical non-negative integers become BigInt, other numbers NonInteger.
function parseStrictJson(input) {
  let text = input;
  if (input instanceof Uint8Array) {
    try { text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(input); }
    catch { throw new MalformedError("not valid UTF-8", ["m_json_utf8"]); }
  }
  if (typeof text !== "string") throw new MalformedError("not text", ["m_not_text"]);
  let i = 0;
  // `key`: the fault's catalogue key (m_json_*); the offset is added to its parameters.
  const fail = (msg, key, params) => {
    throw new MalformedError(`${msg} at offset ${i}`, [key, { ...params, offset: i }]);
  };
  const ws = () => { while (i < text.length && " \t\n\r".includes(text[i])) i++; };
  const value = (depth) => {
    if (depth > MAX_DEPTH) fail("nested too deeply", "m_json_depth");
    ws();
    const c = text[i];
    if (c === "{") return object(depth);
    if (c === "[") return array(depth);
    if (c === '"') return string();
    if (c === "-" || (c >= "0" && c <= "9")) return number();
    if (text.startsWith("true", i)) { i += 4; return true; }
    if (text.startsWith("false", i)) { i += 5; return false; }
    if (text.startsWith("null", i)) { i += 4; return null; }
    return fail("unexpected character", "m_json_syntax");
  };
  const object = (depth) => {
    i++;
    const out = new Map();
    ws();
    if (text[i] === "}") { i++; return out; }
    for (;;) {
      ws();
      if (text[i] !== '"') fail("expected a key", "m_json_syntax");
      const key = string();
      if (out.has(key)) fail(`duplicate key "${key}"`, "m_json_duplicate", { key });
      ws();
      if (text[i] !== ":") fail("expected ':'", "m_json_syntax");
      i++;
      out.set(key, value(depth + 1));
      ws();
      if (text[i] === ",") { i++; continue; }
      if (text[i] === "}") { i++; return out; }
      fail("expected ',' or '}'", "m_json_syntax");
    }
  };
  const array = (depth) => {
    i++;
    const out = [];
    ws();
    if (text[i] === "]") { i++; return out; }
    for (;;) {
      out.push(value(depth + 1));
      ws();
      if (text[i] === ",") { i++; continue; }
      if (text[i] === "]") { i++; return out; }
      fail("expected ',' or ']'", "m_json_syntax");
    }
  };
  const string = () => {
    i++;
    let out = "";
    for (;;) {
      if (i >= text.length) fail("unterminated string", "m_json_string");
      const c = text[i];
      const code = text.charCodeAt(i);
      if (c === '"') { i++; break; }
      if (code < 0x20) fail("control character in string", "m_json_string");
      if (code >= 0xd800 && code <= 0xdfff) {
        // Raw surrogates: only a valid pair (a real non-BMP character) is text.
        const next = text.charCodeAt(i + 1);
        if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) { out += text[i] + text[i + 1]; i += 2; continue; }
        fail("lone surrogate", "m_json_surrogate");
      }
      if (c !== "\\") { out += c; i++; continue; }
      const e = text[i + 1];
      i += 2;
      const simple = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" }[e];
      if (simple !== undefined) { out += simple; continue; }
      if (e !== "u") fail("bad escape", "m_json_string");
      const hex4 = () => {
        const h = text.slice(i, i + 4);
        if (!/^[0-9a-fA-F]{4}$/.test(h)) fail("bad \\u escape", "m_json_string");
        i += 4;
        return parseInt(h, 16);
      };
      const u = hex4();
      if (u >= 0xd800 && u <= 0xdbff) {
        if (text[i] !== "\\" || text[i + 1] !== "u") fail("lone surrogate escape", "m_json_surrogate");
        i += 2;
        const lo = hex4();
        if (lo < 0xdc00 || lo > 0xdfff) fail("lone surrogate escape", "m_json_surrogate");
        out += String.fromCharCode(u, lo);
      } else if (u >= 0xdc00 && u <= 0xdfff) {
        fail("lone surrogate escape", "m_json_surrogate");
      } else {
        out += String.fromCharCode(u);
      }
    }
    return out;
  };
  const number = () => {
    const m = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(i));
    if (!m) fail("bad number", "m_json_syntax");
    i += m[0].length;
    if (/^(0|[1-9][0-9]*)$/.test(m[0])) return BigInt(m[0]);
    return new NonInteger(m[0]);
  };
  if (text.charCodeAt(0) === 0xfeff) fail("byte-order mark", "m_json_bom");
  const v = value(0);
  ws();
  if (i !== text.length) fail("trailing characters", "m_json_trailing");
  return v;
}

// ---------------------------------------------------------------- bytes and hashes

function hexToBytes(hex) {
  const out = new Uint8Array(hex.length / 2);
  for (let k = 0; k < out.length; k++) out[k] = parseInt(hex.substr(2 * k, 2), 16);
  return out;
}

function bytesToHex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function concat(parts) {
  const len = parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(len);
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.length; }
  return out;
}

function u32be(n) { const b = new Uint8Array(4); new DataView(b.buffer).setUint32(0, n); return b; }
function u64be(n) { const b = new Uint8Array(8); new DataView(b.buffer).setBigUint64(0, BigInt(n)); return b; }
function u8(n) { return Uint8Array.of(n); }
// field(x) = u32be(len(x)) || x
function field(x) { const b = typeof x === "string" ? te.encode(x) : x; return concat([u32be(b.length), b]); }

function needSubtle() {
  if (!subtle) throw new Error("WebCrypto is not available (the page must be served over https or from localhost)");
  return subtle;
}

async function sha256(bytes) {
  return new Uint8Array(await needSubtle().digest("SHA-256", bytes));
}

async function hmacSha256(key, message) {
  const k = await needSubtle().importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await needSubtle().sign("HMAC", k, message));
}

// ---------------------------------------------------------------- ChaCha20 (RFC 8439)

function rotl(v, c) { return ((v << c) | (v >>> (32 - c))) >>> 0; }

// One 64-byte block as 16 little-endian words: key (32 bytes), counter, 12-byte nonce.
function chacha20Block(key, counter, nonce = new Uint8Array(12)) {
  const kv = new DataView(key.buffer, key.byteOffset, 32);
  const nv = new DataView(nonce.buffer, nonce.byteOffset, 12);
  const s = new Uint32Array(16);
  s[0] = 0x61707865; s[1] = 0x3320646e; s[2] = 0x79622d32; s[3] = 0x6b206574;
  for (let k = 0; k < 8; k++) s[4 + k] = kv.getUint32(4 * k, true);
  s[12] = counter >>> 0;
  for (let k = 0; k < 3; k++) s[13 + k] = nv.getUint32(4 * k, true);
  const x = Uint32Array.from(s);
  const qr = (a, b, c, d) => {
    x[a] = (x[a] + x[b]) >>> 0; x[d] = rotl(x[d] ^ x[a], 16);
    x[c] = (x[c] + x[d]) >>> 0; x[b] = rotl(x[b] ^ x[c], 12);
    x[a] = (x[a] + x[b]) >>> 0; x[d] = rotl(x[d] ^ x[a], 8);
    x[c] = (x[c] + x[d]) >>> 0; x[b] = rotl(x[b] ^ x[c], 7);
  };
  for (let r = 0; r < 10; r++) {
    qr(0, 4, 8, 12); qr(1, 5, 9, 13); qr(2, 6, 10, 14); qr(3, 7, 11, 15);
    qr(0, 5, 10, 15); qr(1, 6, 11, 12); qr(2, 7, 8, 13); qr(3, 4, 9, 14);
  }
  for (let k = 0; k < 16; k++) x[k] = (x[k] + s[k]) >>> 0;
  return x;
}

function chacha20BlockBytes(key, counter) {
  const w = chacha20Block(key, counter);
  const out = new Uint8Array(64);
  const v = new DataView(out.buffer);
  for (let k = 0; k < 16; k++) v.setUint32(4 * k, w[k], true);
  return out;
}

// ---------------------------------------------------------------- the deal (FAIRNESS §3)

function dealMessage(clientSeedBytes, nonce, decks) {
  return concat([field("reddog/deal"), field(u32be(1)), field(clientSeedBytes), field(u64be(nonce)), field(u8(decks))]);
}

function cardText(code) { return RANKS[Math.floor(code / 4)] + SUITS[code % 4]; }
function rankOf(text) { return RANKS.indexOf(text[0]) + 2; }

// The first `count` cards (codes) of the shoe dealt from these inputs, and the words rejected.
async function deal(serverSeed, clientSeedBytes, nonce, decks, count) {
  const key = await hmacSha256(serverSeed, dealMessage(clientSeedBytes, nonce, decks));
  let block = 0, words = null, w = 16;
  const next = () => {
    if (w === 16) { words = chacha20Block(key, block++); w = 0; }
    return words[w++];
  };
  const N = 52 * decks;
  const shoe = Array.from({ length: N }, (_, p) => p % 52);
  let rejected = 0;
  for (let i = 0; i < count; i++) {
    const n = N - i;
    const limit = 2 ** 32 - (2 ** 32 % n);
    let x = next();
    while (x >= limit) { rejected++; x = next(); }
    const j = i + (x % n);
    [shoe[i], shoe[j]] = [shoe[j], shoe[i]];
  }
  return { key, codes: shoe.slice(0, count), rejected };
}

// ---------------------------------------------------------------- rules (RULES.md)

function handClass(cards) {
  const a = rankOf(cards[0]), b = rankOf(cards[1]);
  if (a === b) return { kind: "pair", spread: 0 };
  const d = Math.abs(a - b);
  if (d === 1) return { kind: "consecutive", spread: 0 };
  return { kind: "non_consecutive", spread: d - 1 };
}

// What a seat gets back: stake·(odds+1) on a win, stake on a push, 0 on a loss (BigInt).
function seatReturn(cards, stake, paytable) {
  const h = handClass(cards);
  if (h.kind === "consecutive") return { outcome: "push", returned: stake };
  const third = rankOf(cards[2]);
  const a = rankOf(cards[0]), b = rankOf(cards[1]);
  if (h.kind === "pair") {
    if (third === a) return { outcome: "win", returned: stake * (paytable.three_of_a_kind + 1n), odds: paytable.three_of_a_kind };
    return { outcome: "push", returned: stake };
  }
  const lo = Math.min(a, b), hi = Math.max(a, b);
  if (third > lo && third < hi) {
    const odds = paytable.spread[h.spread - 1];
    return { outcome: "win", returned: stake * (odds + 1n), odds };
  }
  return { outcome: "lose", returned: 0n };
}

// ---------------------------------------------------------------- transcript (design §4)

const oddsBytes = (pt) => concat([...pt.spread, pt.three_of_a_kind].map((o) => u32be(Number(o))));

// The bytes t_0 is the SHA-256 of: version 2 (its own label, the rules digest last) when the
// reveal has a rules digest (v3), else version 1.
function transcriptStartPreimage(r) {
  const bets = concat(r.seats.map((s) => u64be(s.bet)));
  const v2 = typeof r.rules_digest === "string";
  return concat([
    field(v2 ? "reddog/transcript/v2/start" : "reddog/transcript/v1/start"), field(hexToBytes(r.commitment)),
    field(r.table_id), field(r.round_id), field(u64be(r.nonce)), field(u8(Number(r.decks))), field(r.client_seed),
    field(oddsBytes(r.paytable)), field(bets), ...(v2 ? [field(hexToBytes(r.rules_digest))] : []),
  ]);
}

// The bytes the rules digest (FAIRNESS.md 4.6) is the SHA-256 of.
function rulesPreimage(r) {
  return concat([
    field("reddog/rules/v1"), field(u8(Number(r.decks))), field(oddsBytes(r.paytable)),
    field(concat([u64be(r.limits.min_bet), u64be(r.limits.max_bet)])), field(r.currency.code),
    field(u8(Number(r.currency.exponent))),
  ]);
}

async function rulesDigest(r) {
  return bytesToHex(await sha256(rulesPreimage(r)));
}

// The chain t_0, t_1, …, t_K (hex), one hash per Decide step.
async function transcriptChain(r) {
  let t = await sha256(transcriptStartPreimage(r));
  const chain = [bytesToHex(t)];
  for (const step of r.decisions) {
    const body = concat(step.map((d) => Uint8Array.of(Number(d.seat), d.action === "raise" ? 1 : 2)));
    t = await sha256(concat([field("reddog/transcript/v1/decide"), field(t), field(body)]));
    chain.push(bytesToHex(t));
  }
  return chain;
}

// The round's transcript hash t_K.
async function transcriptHash(r) {
  const chain = await transcriptChain(r);
  return chain[chain.length - 1];
}

// ---------------------------------------------------------------- grammar

const V1_KEYS = ["algorithm", "server_seed", "commitment", "client_seed", "nonce", "decks", "cards"];
const V2_KEYS = ["format", "algorithm", "server_seed", "commitment", "table_id", "round_id", "client_seed", "nonce",
  "decks", "cards", "paytable", "decisions", "seats", "transcript"];
const V3_KEYS = [...V2_KEYS, "limits", "currency", "rules_digest"];

const isMap = (v) => v instanceof Map;
// msg: the English text (`errors`, unchanged); key and params: the same in catalogue form (`says`).
function bad(msg, key, params) { throw new MalformedError(msg, params ? [key, params] : [key]); }
function exactKeys(m, keys, optional, where) {
  if (!isMap(m)) bad(`${where} must be an object`, "m_not_object", { what: where });
  // The reveal's own keys have messages of their own (m_reveal_…), so that the word "reveal"
  // is translated; a nested object is named by its path, as written.
  const keyFault = (fault, k) => (where === "reveal"
    ? bad(`${where}: ${fault} key "${k}"`, `m_reveal_${fault}_key`, { key: k })
    : bad(`${where}: ${fault} key "${k}"`, `m_${fault}_key`, { where, key: k }));
  for (const k of keys) if (!m.has(k)) keyFault("missing", k);
  for (const k of m.keys()) if (!keys.includes(k) && !(optional || []).includes(k)) keyFault("unknown", k);
}
function str(v, what) {
  if (typeof v !== "string") bad(`${what} must be a string`, "m_not_string", { what });
  return v;
}
function int(v, what, lo, hi) {
  if (typeof v !== "bigint") {
    bad(`${what} must be a non-negative integer without sign, fraction or exponent`, "m_not_integer", { what });
  }
  if (v < lo || v > hi) bad(`${what} must be within ${lo} … ${hi}`, "m_int_range", { what, lo, hi });
  return v;
}
function hex64(v, what, lowerOnly) {
  str(v, what);
  if (lowerOnly && !/^[0-9a-f]{64}$/.test(v)) bad(`${what} must be 64 lower-case hex digits`, "m_hex64_lower", { what });
  if (!/^[0-9a-fA-F]{64}$/.test(v)) bad(`${what} must be 64 hex digits`, "m_hex64", { what });
  return v.toLowerCase();
}
const utf8Len = (s) => te.encode(s).length;
function noControl(s) { return !/[\u0000-\u001f\u007f-\u009f]/.test(s); }
function cards(v) {
  if (!Array.isArray(v)) bad("cards must be an array", "m_not_array", { what: "cards" });
  for (const c of v) {
    if (typeof c !== "string" || !/^[23456789TJQKA][cdhs]$/.test(c)) {
      bad(`cards: "${c}" is not a card`, "m_not_card", { card: `${c}` });
    }
  }
  if (v.length < 2 || v.length > 3) bad("cards must hold 2 or 3 cards", "m_card_count");
  const h = handClass(v);
  if (h.kind === "consecutive" && v.length !== 2) {
    bad("cards: a consecutive hand has exactly 2 cards", "m_cards_consecutive");
  }
  if (h.kind !== "consecutive" && v.length !== 3) bad("cards: this hand has exactly 3 cards", "m_cards_three");
  return v;
}

function parseV1(m) {
  exactKeys(m, V1_KEYS, ["round_id"], "reveal");
  if (str(m.get("algorithm"), "algorithm") !== "reddog-deal-v1") bad("algorithm must be reddog-deal-v1", "m_algorithm");
  const r = {
    format: "reddog-reveal-v1",
    server_seed: hex64(m.get("server_seed"), "server_seed", false),
    commitment: hex64(m.get("commitment"), "commitment", false),
    client_seed: str(m.get("client_seed"), "client_seed"),
    nonce: int(m.get("nonce"), "nonce", 0n, U64_MAX),
    decks: int(m.get("decks"), "decks", 1n, 8n),
  };
  r.cards = cards(m.get("cards"));
  if (m.has("round_id")) {
    r.round_id = str(m.get("round_id"), "round_id");
    const rl = utf8Len(r.round_id);
    if (rl < 1 || rl > 128 || !noControl(r.round_id)) {
      bad("round_id must be 1-128 bytes without control characters", "m_round_id");
    }
  }
  return r;
}

function parseV2(m) {
  const format = m.get("format");
  if (format !== "reddog-reveal-v2" && format !== "reddog-reveal-v3") {
    bad("format must be reddog-reveal-v3 or reddog-reveal-v2", "m_format");
  }
  exactKeys(m, format === "reddog-reveal-v3" ? V3_KEYS : V2_KEYS, [], "reveal");
  if (str(m.get("algorithm"), "algorithm") !== "reddog-deal-v1") bad("algorithm must be reddog-deal-v1", "m_algorithm");
  const r = {
    format,
    server_seed: hex64(m.get("server_seed"), "server_seed", true),
    commitment: hex64(m.get("commitment"), "commitment", true),
    table_id: str(m.get("table_id"), "table_id"),
    round_id: str(m.get("round_id"), "round_id"),
    client_seed: str(m.get("client_seed"), "client_seed"),
    nonce: int(m.get("nonce"), "nonce", 0n, U64_MAX),
    decks: int(m.get("decks"), "decks", 1n, 8n),
  };
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(r.table_id)) bad("table_id must be 1-64 of [A-Za-z0-9._-]", "m_table_id");
  const rl = utf8Len(r.round_id);
  if (rl < 1 || rl > 128 || !noControl(r.round_id)) {
    bad("round_id must be 1-128 bytes without control characters", "m_round_id");
  }
  const cl = utf8Len(r.client_seed);
  if (cl < 1 || cl > 1024) bad("client_seed must be 1-1024 bytes", "m_client_seed");
  r.cards = cards(m.get("cards"));
  const pt = m.get("paytable");
  exactKeys(pt, ["spread", "three_of_a_kind"], [], "paytable");
  const spread = pt.get("spread");
  if (!Array.isArray(spread) || spread.length !== 11) bad("paytable.spread must hold 11 integers", "m_spread");
  r.paytable = {
    spread: spread.map((o, k) => int(o, `paytable.spread[${k}]`, 1n, 10000n)),
    three_of_a_kind: int(pt.get("three_of_a_kind"), "paytable.three_of_a_kind", 1n, 10000n),
  };
  if (format === "reddog-reveal-v3") {
    const lim = m.get("limits");
    exactKeys(lim, ["min_bet", "max_bet"], [], "limits");
    const minBet = int(lim.get("min_bet"), "limits.min_bet", 1n, MAX_BET);
    r.limits = { min_bet: minBet, max_bet: int(lim.get("max_bet"), "limits.max_bet", minBet, MAX_BET) };
    const cur = m.get("currency");
    exactKeys(cur, ["code", "exponent"], [], "currency");
    const code = str(cur.get("code"), "currency.code");
    if (!/^[A-Z]{3}$/.test(code)) bad("currency.code must be three capital letters A-Z", "m_currency_code");
    r.currency = { code, exponent: int(cur.get("exponent"), "currency.exponent", 0n, 4n) };
    r.rules_digest = hex64(m.get("rules_digest"), "rules_digest", true);
  }
  const seats = m.get("seats");
  if (!Array.isArray(seats) || seats.length < 1 || seats.length > 7) bad("seats must hold 1-7 seats", "m_seat_count");
  r.seats = seats.map((s, k) => {
    exactKeys(s, ["bet", "raised", "stake", "returned"], [], `seats[${k}]`);
    if (typeof s.get("raised") !== "boolean") {
      bad(`seats[${k}].raised must be true or false`, "m_not_boolean", { what: `seats[${k}].raised` });
    }
    return {
      bet: int(s.get("bet"), `seats[${k}].bet`, 0n, U64_MAX),
      raised: s.get("raised"),
      stake: int(s.get("stake"), `seats[${k}].stake`, 0n, U64_MAX),
      returned: int(s.get("returned"), `seats[${k}].returned`, 0n, U64_MAX),
    };
  });
  const decisions = m.get("decisions");
  if (!Array.isArray(decisions)) bad("decisions must be an array", "m_not_array", { what: "decisions" });
  const decided = new Set();
  r.decisions = decisions.map((step, k) => {
    if (!Array.isArray(step) || step.length === 0) {
      bad(`decisions[${k}] must be a non-empty array`, "m_step_empty", { what: `decisions[${k}]` });
    }
    let last = -1n;
    return step.map((d, j) => {
      exactKeys(d, ["seat", "action"], [], `decisions[${k}][${j}]`);
      const seat = int(d.get("seat"), `decisions[${k}][${j}].seat`, 0n, 6n);
      const action = d.get("action");
      if (action !== "raise" && action !== "stand") {
        const what = `decisions[${k}][${j}].action`;
        bad(`${what} must be "raise" or "stand"`, "m_action", { what });
      }
      if (seat <= last) {
        bad(`decisions[${k}]: seats must be in ascending order`, "m_seat_order", { what: `decisions[${k}]` });
      }
      if (decided.has(seat)) bad(`decisions: seat ${seat} decides twice`, "m_seat_twice", { seat });
      if (seat >= BigInt(r.seats.length)) {
        bad(`decisions[${k}][${j}].seat: no such seat`, "m_no_seat", { what: `decisions[${k}][${j}].seat` });
      }
      last = seat;
      decided.add(seat);
      return { seat, action };
    });
  });
  if (handClass(r.cards).kind !== "non_consecutive" && r.decisions.length) {
    bad("decisions must be empty unless the hand is non-consecutive", "m_decisions_not_needed");
  }
  r.transcript = hex64(m.get("transcript"), "transcript", true);
  return r;
}

// Parses and checks the grammar; throws MalformedError.
function parseReveal(text) {
  const m = parseStrictJson(text);
  if (!isMap(m)) bad("a reveal is a JSON object", "m_reveal_not_object");
  return m.has("format") ? parseV2(m) : parseV1(m);
}

// ---------------------------------------------------------------- verification

// ---------------------------------------------------------------- the player's record

const RECORD_KEYS = ["commitment", "client_seed", "nonce", "round_id", "table_id", "decks", "transcript",
  "rules_digest", "bets", "returned", "decisions"];

// One integer: a BigInt, a safe non-negative Number, or the text form of FAIRNESS.md 4.5
// (decimal digits, no sign, no leading zero).
function recordInt(v, what, lo, hi) {
  let n;
  if (typeof v === "bigint") n = v;
  else if (typeof v === "number" && Number.isSafeInteger(v) && v >= 0) n = BigInt(v);
  else if (typeof v === "string" && /^(0|[1-9][0-9]*)$/.test(v)) n = BigInt(v);
  else {
    const value = JSON.stringify(String(v));
    bad(`${what}: ${value} is not a decimal integer without sign or leading zero`, "m_record_integer", { what, value });
  }
  if (n < lo || n > hi) bad(`${what} must be within ${lo} … ${hi}`, "m_int_range", { what, lo, hi });
  return n;
}

function recordAmounts(v, what) {
  const list = typeof v === "string" ? v.split(",") : v;
  if (!Array.isArray(list) || list.length < 1 || list.length > 7) {
    bad(`${what} must list 1 to 7 integers`, "m_amount_count", { what });
  }
  return list.map((x, k) => recordInt(x, `${what}[${k}]`, 0n, U64_MAX));
}

// Decisions: [[{seat, action}, …], …] or the text form "0:raise,1:stand;2:stand" ("" = none).
function recordDecisions(v, what) {
  let calls = v;
  if (typeof v === "string") {
    calls = v === "" ? [] : v.split(";").map((call) => call.split(",").map((part) => {
      const i = part.indexOf(":");
      if (i < 0) bad(`${what}: "${part}" is not SEAT:raise or SEAT:stand`, "m_record_decision", { what, part });
      return { seat: part.slice(0, i), action: part.slice(i + 1) };
    }));
  }
  if (!Array.isArray(calls)) bad(`${what} must be an array of Decide calls`, "m_decide_calls", { what });
  return calls.map((call, k) => {
    if (!Array.isArray(call) || call.length === 0) {
      bad(`${what}[${k}] must be a non-empty array`, "m_step_empty", { what: `${what}[${k}]` });
    }
    return call.map((d, j) => {
      const get = (key) => (d instanceof Map ? d.get(key) : d?.[key]);
      const keys = d instanceof Map ? [...d.keys()] : Object.keys(d ?? {});
      if (keys.length !== 2 || !keys.includes("seat") || !keys.includes("action")) {
        bad(`${what}[${k}][${j}] must be exactly {"seat","action"}`, "m_seat_action", { what: `${what}[${k}][${j}]` });
      }
      const action = get("action");
      if (action !== "raise" && action !== "stand") {
        const at = `${what}[${k}][${j}].action`;
        bad(`${at} must be "raise" or "stand"`, "m_action", { what: at });
      }
      return { seat: recordInt(get("seat"), `${what}[${k}][${j}].seat`, 0n, 6n), action };
    });
  });
}

// The player's record of a round, checked and normalised; throws MalformedError. Keys as in
// `--expect FILE` (FAIRNESS.md 4.5); each value in its JSON form or its text form.
function parseRecord(record = {}) {
  const out = {};
  for (const [k, v] of Object.entries(record ?? {})) {
    if (v === undefined || v === null) continue;
    if (!RECORD_KEYS.includes(k)) bad(`record: unknown key "${k}"`, "m_record_unknown_key", { key: k });
    if (k === "commitment" || k === "transcript" || k === "rules_digest") out[k] = hex64(v, `record.${k}`, false);
    else if (k === "nonce") out[k] = recordInt(v, "record.nonce", 0n, U64_MAX);
    else if (k === "decks") out[k] = recordInt(v, "record.decks", 1n, 8n);
    else if (k === "bets" || k === "returned") out[k] = recordAmounts(v, `record.${k}`);
    else if (k === "decisions") out[k] = recordDecisions(v, "record.decisions");
    else out[k] = str(v, `record.${k}`);
  }
  return out;
}

// Calls in order; the seats within a call in any order (a player writes them as decided).
const callsText = (d) => d.map((c) => c.map((x) => `${x.seat}:${x.action}`).sort().join(",")).join(";");

async function verifyReveal(text, record = {}) {
  let r, expect;
  try {
    expect = parseRecord(record);
    r = parseReveal(text);
  } catch (e) {
    if (e instanceof MalformedError) return { verdict: "malformed", errors: [e.message], says: [e.say], checks: [] };
    throw e;
  }
  const checks = [];
  // `say`: the detail as a catalogue key and its parameters, for a page in another language.
  const check = (name, ok, detail, say) => checks.push({ name, ok: !!ok, detail, say });

  const seed = hexToBytes(r.server_seed);
  const commitment = bytesToHex(await sha256(seed));
  check("commitment", commitment === r.commitment, `SHA-256(server_seed) = ${commitment}`);

  const { codes, rejected } = await deal(seed, te.encode(r.client_seed), r.nonce, Number(r.decks), r.cards.length);
  const dealt = codes.map(cardText);
  check("cards", dealt.join(" ") === r.cards.join(" "), `dealt ${dealt.join(" ")}${rejected ? ` (${rejected} word(s) rejected)` : ""}`,
    rejected ? ["vc_cards_rejected", { cards: dealt.join(" "), n: rejected }] : ["vc_cards", { cards: dealt.join(" ") }]);

  const hand = handClass(r.cards);
  const out = { format: r.format, cards: r.cards, hand, reveal: r, checks, errors: [] };

  if (r.format !== "reddog-reveal-v1") {
    const raisedBy = new Map();
    for (const step of r.decisions) for (const d of step) raisedBy.set(d.seat, d.action === "raise");
    out.seats = r.seats.map((s, k) => {
      const raised = raisedBy.get(BigInt(k)) === true;
      const stake = raised ? s.bet * 2n : s.bet;
      const pay = seatReturn(r.cards, stake, r.paytable);
      check(`seats[${k}].bet`, s.bet >= 1n && s.bet <= MAX_BET, `bet ${s.bet} within 1 … ${MAX_BET}`,
        ["vc_bet", { bet: s.bet, max: MAX_BET }]);
      check(`seats[${k}].raised`, s.raised === raised, raised ? "decided raise" : "no raise decided",
        [raised ? "vc_raised" : "vc_not_raised"]);
      check(`seats[${k}].stake`, s.stake === stake, `bet ${s.bet}${raised ? " raised" : ""} → stake ${stake}`,
        [raised ? "vc_stake_raised" : "vc_stake", { bet: s.bet, stake }]);
      check(`seats[${k}].returned`, s.returned === pay.returned && pay.returned <= U64_MAX,
        `${pay.outcome}${pay.odds !== undefined ? ` at ${pay.odds} to 1` : ""} → returns ${pay.returned}`,
        pay.odds !== undefined ? ["vc_returned_odds", { outcome: pay.outcome, odds: pay.odds, returned: pay.returned }]
          : ["vc_returned", { outcome: pay.outcome, returned: pay.returned }]);
      return { ...s, expected_stake: stake, expected_returned: pay.returned, outcome: pay.outcome };
    });
    const staked = r.seats.reduce((a, s) => a + s.stake, 0n);
    const returned = r.seats.reduce((a, s) => a + s.returned, 0n);
    check("totals", staked <= U64_MAX && returned <= U64_MAX, `staked ${staked}, returned ${returned} (at most ${U64_MAX})`,
      ["vc_totals", { staked, returned, max: U64_MAX }]);
    if (r.format === "reddog-reveal-v3") {
      const d = await rulesDigest(r);
      check("rules_digest", d === r.rules_digest, `recomputed ${d}`, ["vc_recomputed", { value: d }]);
      const outside = r.seats.filter((s) => s.bet < r.limits.min_bet || s.bet > r.limits.max_bet).length;
      check("limits", outside === 0, `every bet within ${r.limits.min_bet} … ${r.limits.max_bet}`,
        ["vc_limits", { min: r.limits.min_bet, max: r.limits.max_bet }]);
    }
    const t = await transcriptHash(r);
    check("transcript", t === r.transcript, `recomputed ${t}`, ["vc_recomputed", { value: t }]);
  }

  // The reveal must be the player's round: compare with the player's record. An entry the
  // reveal cannot confirm (a v1 reveal has no table_id, transcript, money or decisions; a v2
  // reveal no rules digest) fails: the reveal does not prove it is this round.
  const v2 = r.format !== "reddog-reveal-v1";
  const revealed = {
    ...r,
    bets: v2 ? r.seats.map((s) => s.bet).join(",") : undefined,
    returned: v2 ? r.seats.map((s) => s.returned).join(",") : undefined,
    decisions: v2 ? callsText(r.decisions) : undefined,
  };
  for (const k of RECORD_KEYS) {
    if (expect[k] === undefined) continue;
    const want = k === "bets" || k === "returned" ? expect[k].join(",") : k === "decisions" ? callsText(expect[k]) : expect[k];
    const have = revealed[k];
    check(`expected ${k}`, have === want, `the player's record: ${want}; revealed: ${have ?? "(absent)"}`,
      ["vc_expected", { want, have }]);
  }

  out.errors = checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`);
  out.verdict = out.errors.length ? "not_verified" : "verified";
  return out;
}

// ---------------------------------------------------------------- strict Ed25519

// The one Ed25519 rule of every verifier (docs/FAIRNESS.md 4.7, "Strict Ed25519"): the public
// key A and the signature's R canonical (y < p) and not among the 14 encodings of the 8 points
// of small order, S < L, then WebCrypto's cofactorless check. WebCrypto alone accepts a
// small-order key: with the identity point as key and R = identity, S = 0, any message
// "verifies" — the checks here come first.
const ED25519_P = (1n << 255n) - 19n;
const ED25519_L = (1n << 252n) + 27742317777372353535851937790883648493n;
const SMALL_ORDER_ENCODINGS = new Set([
  "0000000000000000000000000000000000000000000000000000000000000000",
  "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
  "0000000000000000000000000000000000000000000000000000000000000080",
  "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
  "0100000000000000000000000000000000000000000000000000000000000000",
  "0100000000000000000000000000000000000000000000000000000000000080",
  "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
  "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
  "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
  "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
  "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
  "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
  "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
  "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
]);
const leInt = (bytes) => bytes.reduceRight((a, b) => (a << 8n) | BigInt(b), 0n);
function strictPoint(bytes) {
  return (leInt(bytes) & ((1n << 255n) - 1n)) < ED25519_P && !SMALL_ORDER_ENCODINGS.has(bytesToHex(bytes));
}

// Resolves to true only when the strict rule holds; false for any refusal, including a key
// WebCrypto cannot import. Throws only where WebCrypto has no Ed25519 at all.
async function ed25519Verify(publicKeyHex, signatureHex, message) {
  const key = hexToBytes(publicKeyHex.toLowerCase());
  const sig = hexToBytes(signatureHex.toLowerCase());
  if (key.length !== 32 || sig.length !== 64) return false;
  if (!strictPoint(key) || !strictPoint(sig.subarray(0, 32)) || leInt(sig.subarray(32)) >= ED25519_L) return false;
  let imported;
  try {
    imported = await needSubtle().importKey("raw", key, { name: "Ed25519" }, false, ["verify"]);
  } catch (e) {
    if (e && e.name === "NotSupportedError") throw e;
    return false;
  }
  return needSubtle().verify({ name: "Ed25519" }, imported, sig, message);
}

// ---------------------------------------------------------------- signed receipts

// The Settle receipt's message: version 2 under a key id, version 1 without.
async function settleMessage(keyId, transcriptHex, revealBytes) {
  const digest = await sha256(revealBytes);
  return keyId === undefined || keyId === null
    ? concat([field("reddog/receipt/settle/v1"), field(hexToBytes(transcriptHex)), field(digest)])
    : concat([field("reddog/receipt/settle/v2"), field(keyId), field(hexToBytes(transcriptHex)), field(digest)]);
}

// The reveal's exact bytes, less one trailing line feed.
function revealBytes(text) {
  let bytes = te.encode(text);
  if (bytes.length && bytes[bytes.length - 1] === 0x0a) bytes = bytes.subarray(0, bytes.length - 1);
  return bytes;
}

// Signed receipts (docs/FAIRNESS.md 4.7): verifyReceipt(text, publicKeyHex, signatureHex,
// record, keyId) resolves to verifyReveal's answer with one more check, "signature": the
// engine's Ed25519 signature (Settle's `signature`, 128 hex) by its public key (GetRules'
// `signing_keys`, 64 hex) over "reddog/receipt/settle/v2", the key id (Settle's
// `signing_key_id`), the reveal's transcript and SHA-256 of the reveal's exact UTF-8 bytes
// (one trailing line feed ignored); a version-1 receipt (no key id) is read too. Checked
// strictly (ed25519Verify). It says nothing of whether the key is trusted: verifySigned does.
// Needs WebCrypto Ed25519 (node 20, Chromium 137 and later); where it is missing the check
// fails, naming why.
async function verifyReceipt(text, publicKeyHex, signatureHex, record = {}, keyId) {
  if (typeof publicKeyHex !== "string" || !/^[0-9a-fA-F]{64}$/.test(publicKeyHex)) {
    return { verdict: "malformed", errors: ["public key: must be 64 hexadecimal digits"], says: [["m_public_key"]],
      checks: [] };
  }
  if (typeof signatureHex !== "string" || !/^[0-9a-fA-F]{128}$/.test(signatureHex)) {
    return { verdict: "malformed", errors: ["signature: must be 128 hexadecimal digits"], says: [["m_signature"]],
      checks: [] };
  }
  const out = await verifyReveal(text, record);
  if (out.verdict === "malformed") return out;
  let ok = false;
  let detail;
  let say;
  if (out.format === "reddog-reveal-v1") {
    detail = "a version-1 reveal has no transcript: no receipt covers it";
    say = ["vc_sig_v1"];
  } else {
    const bytes = revealBytes(text);
    try {
      if (keyId !== undefined && keyId !== null
        && await ed25519Verify(publicKeyHex, signatureHex, await settleMessage(keyId, out.reveal.transcript, bytes))) {
        out.settleVersion = 2;
      } else if (await ed25519Verify(publicKeyHex, signatureHex, await settleMessage(null, out.reveal.transcript, bytes))) {
        out.settleVersion = 1;
      }
      ok = out.settleVersion !== undefined;
      detail = ok ? `the engine's signature covers this reveal (settle receipt v${out.settleVersion})`
        : "does not cover this reveal (another reveal, key or key id)";
      say = [ok ? "vc_sig_ok" : "vc_sig_bad"];
    } catch (e) {
      detail = `not checked: ${e.message}`;
      say = ["vc_sig_unchecked", { error: e.message }];
    }
  }
  out.checks.push({ name: "signature", ok, detail, say });
  if (!ok) out.errors.push(`signature: ${detail}`);
  out.verdict = out.errors.length ? "not_verified" : "verified";
  return out;
}

// ---------------------------------------------------------------- step receipts

// A step receipt (docs/FAIRNESS.md 4.7): `receipt_json` of StartRound (step 0) or Decide
// (step k), version 2 (the engine's signature over its key id, the commitment, table, round
// id, rules digest, sandbox flag, step, transcript t_step, the cards shown and this step's
// decisions) or version 1 (no key id, table, rules or sandbox flag). Throws MalformedError.
const STEP_KEYS = ["format", "signing_key_id", "commitment", "table_id", "round_id", "rules_digest", "sandbox", "step",
  "transcript", "cards", "decisions", "signature"];
const STEP_KEYS_V1 = ["format", "signing_key_id", "commitment", "round_id", "step", "transcript", "cards", "decisions",
  "signature"];
function parseStepReceipt(text) {
  const m = parseStrictJson(text);
  if (isMap(m) && ["reddog-commit-receipt-v2", "reddog-commit-receipt-v1"].includes(m.get("format"))) return parseCommitReceipt(m);
  const version = isMap(m) ? { "reddog-step-receipt-v2": 2, "reddog-step-receipt-v1": 1 }[m.get("format")] : undefined;
  if (!version) bad("receipt.format must be reddog-step-receipt-v2 (or -v1)", "m_not_string", { what: "receipt.format" });
  exactKeys(m, version === 2 ? STEP_KEYS : STEP_KEYS_V1, [], "receipt");
  const keyId = str(m.get("signing_key_id"), "receipt.signing_key_id");
  const step = int(m.get("step"), "receipt.step", 0n, 7n);
  const shown = m.get("cards");
  if (!Array.isArray(shown) || shown.length < 2 || shown.length > 3) bad("receipt.cards must hold 2 or 3 cards", "m_card_count");
  for (const c of shown) if (typeof c !== "string" || !/^[23456789TJQKA][cdhs]$/.test(c)) bad(`receipt.cards: "${c}" is not a card`, "m_not_card", { card: `${c}` });
  const raw = m.get("decisions");
  if (!Array.isArray(raw)) bad("receipt.decisions must be an array", "m_not_array", { what: "receipt.decisions" });
  const decisions = raw.length ? recordDecisions([raw], "receipt.decisions")[0] : [];
  if ((step === 0n) !== (decisions.length === 0)) bad("receipt.step: step 0 has no decisions, every later step has some", "m_int_range", { what: "receipt.step", lo: 0n, hi: 7n });
  const signature = str(m.get("signature"), "receipt.signature");
  if (!/^[0-9a-fA-F]{128}$/.test(signature)) bad("receipt.signature: must be 128 hexadecimal digits", "m_signature");
  const out = { kind: "step", version, signing_key_id: keyId, commitment: hex64(m.get("commitment"), "receipt.commitment", false),
    round_id: str(m.get("round_id"), "receipt.round_id"), step, transcript: hex64(m.get("transcript"), "receipt.transcript", false),
    cards: shown, decisions, signature: signature.toLowerCase(), table_id: "", rules_digest: "", sandbox: false };
  if (version === 2) {
    out.table_id = str(m.get("table_id"), "receipt.table_id");
    if (typeof m.get("sandbox") !== "boolean") bad("receipt.sandbox must be true or false", "m_not_string", { what: "receipt.sandbox" });
    out.sandbox = m.get("sandbox");
    out.rules_digest = m.get("rules_digest") === "" ? "" : hex64(m.get("rules_digest"), "receipt.rules_digest", false);
  }
  return out;
}

// A CommitSeed receipt (`receipt_json` of CommitSeed): the answer's values and signature.
const COMMIT_KEYS = ["format", "signing_key_id", "commitment", "round_id", "nonce", "table_id", "decks", "rules_digest",
  "expires_at_unix_ms", "algorithm", "sandbox", "signature"];
function parseCommitReceipt(m) {
  exactKeys(m, COMMIT_KEYS, [], "receipt");
  for (const k of ["signing_key_id", "round_id", "table_id", "algorithm"]) str(m.get(k), `receipt.${k}`);
  if (typeof m.get("sandbox") !== "boolean") bad("receipt.sandbox must be true or false", "m_not_string", { what: "receipt.sandbox" });
  const signature = str(m.get("signature"), "receipt.signature");
  if (!/^[0-9a-fA-F]{128}$/.test(signature)) bad("receipt.signature: must be 128 hexadecimal digits", "m_signature");
  return { kind: "commit", version: m.get("format") === "reddog-commit-receipt-v2" ? 2 : 1, signing_key_id: m.get("signing_key_id"),
    commitment: hex64(m.get("commitment"), "receipt.commitment", false), round_id: m.get("round_id"),
    nonce: int(m.get("nonce"), "receipt.nonce", 0n, U64_MAX), table_id: m.get("table_id"),
    decks: int(m.get("decks"), "receipt.decks", 0n, 255n), rules_digest: hex64(m.get("rules_digest"), "receipt.rules_digest", false),
    expires_at_unix_ms: int(m.get("expires_at_unix_ms"), "receipt.expires_at_unix_ms", 0n, (1n << 63n) - 1n),
    algorithm: m.get("algorithm"), sandbox: m.get("sandbox"), signature: signature.toLowerCase() };
}

function commitMessage(c) {
  const i64 = new Uint8Array(8);
  new DataView(i64.buffer).setBigInt64(0, c.expires_at_unix_ms);
  const head = c.version === 2 ? [field("reddog/receipt/commit/v2"), field(c.signing_key_id)] : [field("reddog/receipt/commit/v1")];
  return concat([...head, field(hexToBytes(c.commitment)), field(c.round_id), field(u64be(c.nonce)),
    field(c.table_id), field(u8(Number(c.decks))), field(hexToBytes(c.rules_digest)), field(i64), field(c.algorithm),
    field(u8(c.sandbox ? 1 : 0))]);
}

function stepMessage(s) {
  const sorted = [...s.decisions].sort((a, b) => (a.seat < b.seat ? -1 : a.seat > b.seat ? 1 : 0));
  const decisions = field(concat(sorted.map((d) => Uint8Array.of(Number(d.seat), d.action === "raise" ? 1 : 2))));
  if (s.version === 1) {
    return concat([field("reddog/receipt/step/v1"), field(hexToBytes(s.commitment)), field(s.round_id), field(u32be(Number(s.step))),
      field(hexToBytes(s.transcript)), field(s.cards.join("")), decisions]);
  }
  return concat([field("reddog/receipt/step/v2"), field(s.signing_key_id), field(hexToBytes(s.commitment)), field(s.table_id),
    field(s.round_id), field(s.rules_digest ? hexToBytes(s.rules_digest) : new Uint8Array(0)), field(u8(s.sandbox ? 1 : 0)),
    field(u32be(Number(s.step))), field(hexToBytes(s.transcript)), field(s.cards.join("")), decisions]);
}

// How many of a reveal's cards the table showed after step k: a pair's three at once, a
// consecutive hand's two, a non-consecutive hand's two until every seat decided in calls
// 1 … k, then three.
function shownAfter(r, k) {
  const h = handClass(r.cards);
  if (h.kind === "pair") return 3;
  if (h.kind === "consecutive") return 2;
  const decided = new Set();
  for (const call of r.decisions.slice(0, k)) for (const d of call) decided.add(Number(d.seat));
  return k > 0 && r.seats.every((_, i) => decided.has(i)) ? 3 : 2;
}

// The fingerprint a player compares with the one published elsewhere: SHA-256 of the 32-byte
// public key, 64 hex digits.
async function keyFingerprint(publicKeyHex) { return bytesToHex(await sha256(hexToBytes(publicKeyHex.toLowerCase()))); }

// Trusted keys: a JSON array (or {"signing_keys": [...]}) of {key_id, algorithm, public_key_hex}
// (the form GetRules lists them in), obtained outside the platform: [{ key_id, public_key }]
// (lower-case hex). Throws MalformedError.
function parseTrustedKeys(text) {
  let list = parseStrictJson(text);
  if (isMap(list)) list = list.get("signing_keys");
  if (!Array.isArray(list)) bad("trusted keys must be an array of {key_id, algorithm, public_key_hex}", "m_not_array", { what: "trusted keys" });
  return list.map((k, i) => {
    exactKeys(k, ["key_id", "algorithm", "public_key_hex"], [], `trusted keys[${i}]`);
    if (k.get("algorithm") !== "ed25519") bad(`trusted keys[${i}].algorithm must be "ed25519"`, "m_not_string", { what: `trusted keys[${i}].algorithm` });
    return { key_id: str(k.get("key_id"), `trusted keys[${i}].key_id`),
      public_key: hex64(k.get("public_key_hex"), `trusted keys[${i}].public_key_hex`, false) };
  });
}

// verifySigned(text, { publicKey, signature, keyId, receipts, trustedKeys, allowUntrusted,
// record }) resolves to verifyReveal's answer with every check made with the engine's public
// key — the same verdict as `reddog verify` and verify.py (FAIRNESS.md 4.7):
//   - "signature": Settle's signature, when given (version 2 under the key id: `keyId`, else
//     a signed receipt's, else the trusted entry's; version 1 otherwise);
//   - one check per receipt: signed by the key, naming no card before the table showed it,
//     not of a sandbox round, and the reveal descends from it (same commitment, round id,
//     table and rules digest, the transcript after that step recomputed from the reveal, its
//     cards exactly those shown, its decisions the reveal's call `step`);
//   - "key id": every signed key id, `keyId` and the trusted entry agree;
//   - "key": the key is among `trustedKeys` (got outside the platform) — else not verified,
//     unless `allowUntrusted` (then it proves only that the key the platform named signed).
// `key` tells { fingerprint, source: "trusted" | "untrusted", key_id }; `notes` what a
// verified answer does not prove, and which old formats were read. Nothing is "verified"
// without at least one signature or receipt checked: a public key alone is malformed input.
async function verifySigned(text, { publicKey, signature, keyId, receipts = [], trustedKeys, allowUntrusted = false, record = {} } = {}) {
  const malformed = (e) => ({ verdict: "malformed", errors: [e.message], says: [e.say], checks: [] });
  let steps, trusted;
  try {
    if (typeof publicKey !== "string" || !/^[0-9a-fA-F]{64}$/.test(publicKey)) bad("public key: must be 64 hexadecimal digits", "m_public_key");
    if (!signature && !receipts.length) bad("a public key alone checks nothing: give the Settle signature or a receipt", "m_public_key");
    steps = receipts.map(parseStepReceipt);
    trusted = trustedKeys === undefined || trustedKeys === null || trustedKeys === "" ? null : parseTrustedKeys(trustedKeys);
  } catch (e) {
    if (e instanceof MalformedError) return malformed(e);
    throw e;
  }
  const pk = publicKey.toLowerCase();
  const out = await verifyReveal(text, record);
  if (out.verdict === "malformed") return out;
  out.notes = [];
  const add = (name, ok, detail) => {
    out.checks.push({ name, ok, detail });
    if (!ok) out.errors.push(`${name}: ${detail}`);
  };
  const chain = out.format === "reddog-reveal-v1" ? [] : await transcriptChain(out.reveal);
  const r = out.reveal;
  const signedIds = [];
  for (const s of steps) {
    let ok = false;
    let detail;
    const name = s.kind === "commit" ? "receipt commit" : `receipt step ${s.step}`;
    try {
      if (s.kind === "commit") {
        const when = `expires ${new Date(Number(s.expires_at_unix_ms)).toISOString()} (${s.expires_at_unix_ms} Unix ms)`;
        if (!(await ed25519Verify(pk, s.signature, commitMessage(s)))) detail = `not signed by this key; ${when}`;
        else {
          if (s.version === 2) signedIds.push(s.signing_key_id);
          if (s.sandbox) detail = "a sandbox round: its cards were requested, not dealt fair";
          else {
            ok = out.format === "reddog-reveal-v3" && r.commitment === s.commitment && r.round_id === s.round_id && r.nonce === s.nonce
              && r.table_id === s.table_id && r.decks === s.decks && r.rules_digest === s.rules_digest && s.algorithm === "reddog-deal-v1";
            detail = `signed (v${s.version}), ${when}; the reveal ${ok ? "is" : "is not"} of this commitment's round`;
          }
        }
      } else if (!(await ed25519Verify(pk, s.signature, stepMessage(s)))) detail = "not signed by this key";
      else {
        if (s.version === 2) signedIds.push(s.signing_key_id);
        const k = Number(s.step);
        const call = (d) => d.map((x) => `${x.seat}:${x.action}`).sort().join(",");
        const same = out.format !== "reddog-reveal-v1" && chain.length > k && chain[k] === s.transcript && r.commitment === s.commitment
          && r.round_id === s.round_id && s.cards.every((c, i) => r.cards[i] === c) && (k === 0 || call(r.decisions[k - 1]) === call(s.decisions))
          && (s.version === 1 || (s.table_id === r.table_id && s.rules_digest === (r.rules_digest || "")));
        const shown = out.format === "reddog-reveal-v1" ? 2 : shownAfter(r, k);
        if (same && s.cards.length > shown) detail = `names ${s.cards[shown]}, a card the table had not shown at this step: the engine that signed it leaked the face-down card`;
        else if (s.sandbox) detail = "a sandbox round: its cards were requested, not dealt fair";
        else {
          ok = same && s.cards.length === shown;
          detail = `signed (v${s.version}); the reveal ${ok ? "descends" : "does not descend"} from this signed step`;
        }
      }
    } catch (e) {
      detail = `not checked: ${e.message}`;
    }
    add(name, ok, detail);
    if (s.version === 1) out.notes.push(`${name} is version 1: its key id (and a step's table, rules and sandbox flag) is not signed`);
  }
  const entries = trusted === null ? null : trusted.filter((k) => k.public_key === pk).map((k) => k.key_id);
  const settleId = keyId ?? signedIds[0] ?? (entries && entries[0]);
  if (signature) {
    const sig = await verifyReceipt(text, pk, signature, {}, settleId);
    const c = sig.checks.find((x) => x.name === "signature");
    add("signature", c.ok, c.detail + (c.ok || settleId !== undefined ? "" : "; no key id known: give Settle's signing_key_id"));
    out.settleVersion = sig.settleVersion;
    if (sig.settleVersion === 1) out.notes.push("the Settle signature is version 1: the key id is not inside what it signs");
  }
  const ids = signedIds.map((id) => ["a receipt is signed as key id", id]);
  if (out.settleVersion === 2) ids.push(["the Settle signature is under key id", settleId]);
  if (keyId !== undefined && keyId !== null) ids.push(["the key id given is", keyId]);
  let conflict = null;
  for (let i = 1; i < ids.length && !conflict; i++) {
    if (ids[i][1] !== ids[i - 1][1]) conflict = `the key ids disagree: ${ids[i - 1][0]} "${ids[i - 1][1]}", ${ids[i][0]} "${ids[i][1]}"`;
  }
  const fingerprint = await keyFingerprint(pk);
  if (entries && entries.length) {
    const entry = entries.find((e) => ids.length && e === ids[0][1]) ?? entries[0];
    if (!conflict && ids.length && ids[0][1] !== entry) conflict = `your trusted keys list this public key as key id "${entry}", but ${ids[0][0]} "${ids[0][1]}"`;
    out.key = { fingerprint, source: "trusted", key_id: entry };
    add("key", true, `a trusted key ("${entry}"), fingerprint SHA-256 ${fingerprint}`);
  } else {
    out.key = { fingerprint, source: "untrusted", key_id: settleId };
    if (allowUntrusted) {
      add("key", true, `a key the platform named (untrusted, accepted), fingerprint SHA-256 ${fingerprint}`);
      out.notes.push("the key is not one you trust: the signatures prove only that the key the platform named signed");
    } else if (trusted !== null) {
      add("key", false, `not among your trusted keys (fingerprint SHA-256 ${fingerprint}): it proves only that whoever the platform named signed`);
    } else {
      add("key", false, `no trusted keys given: a key the platform named (fingerprint SHA-256 ${fingerprint}) proves only that it signed`);
    }
  }
  if (conflict) add("key id", false, conflict);
  if (signature && out.verdict !== "malformed" && !steps.some((s) => s.kind === "step") && record.transcript === undefined) {
    out.note = "the signature proves the key's holder produced this reveal, not that it is the round played: give the last step receipt or transcript for that";
    out.notes.push(out.note);
  }
  out.verdict = out.errors.length ? "not_verified" : "verified";
  return out;
}

root.RedDogVerify = Object.freeze({
  U64_MAX,
  MAX_BET,
  RANKS,
  SUITS,
  MalformedError,
  NonInteger,
  parseStrictJson,
  hexToBytes,
  bytesToHex,
  field,
  sha256,
  hmacSha256,
  chacha20Block,
  chacha20BlockBytes,
  dealMessage,
  cardText,
  rankOf,
  deal,
  handClass,
  seatReturn,
  transcriptStartPreimage,
  rulesPreimage,
  rulesDigest,
  transcriptChain,
  transcriptHash,
  parseReveal,
  parseRecord,
  verifyReveal,
  verifyReceipt,
  parseStepReceipt,
  stepMessage,
  commitMessage,
  shownAfter,
  ed25519Verify,
  settleMessage,
  keyFingerprint,
  parseTrustedKeys,
  verifySigned,
});
})(globalThis);
