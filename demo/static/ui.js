// Small helpers shared by the table and the history page.
import { t, hasKey, formatMoney, formatNet, formatNumber, formatDate, cardWords, setCurrency, EASTERN } from "./i18n.js";
import { verifyPinned } from "./pin.js";
import { describeField } from "./record.js";

// Verifies a settled round's reveal against `expect`; when the engine signs receipts, the
// round's signature too, with the key this browser pinned for the table (pin.js): a round
// unsigned, or signed by another key, after a key was seen fails the "signature" check — a
// platform can neither drop the signature nor swap in its own key.
export async function verifyRound(round, expect, signingKeys = []) {
  return verifyPinned(round, expect, signingKeys);
}

// "passed", "failed" or "none" (the round carries no signature check).
export function signatureState(result) {
  const c = (result.checks || []).find((x) => x.name === "signature");
  return c ? (c.ok ? "passed" : "failed") : "none";
}

export const SUIT_NAMES = { c: "clubs", d: "diamonds", h: "hearts", s: "spades" };
export const SUIT_SYMBOLS = { c: "♣", d: "♦", h: "♥", s: "♠" };
export const RANK_NAMES = { 2: "Two", 3: "Three", 4: "Four", 5: "Five", 6: "Six", 7: "Seven", 8: "Eight", 9: "Nine",
  T: "Ten", J: "Jack", Q: "Queen", K: "King", A: "Ace" };

// The table's minor unit: decimals of the currency (from the engine's GetRules), 2 by default.
let EXP = 2;
export function setMinorUnitExponent(exp, currency) {
  if (Number.isInteger(exp) && exp >= 0 && exp <= 6) EXP = exp;
  setCurrency(currency, exp);
}
export const minorPerMajor = () => 10 ** EXP;

// Minor units in the player's language with the table's currency sign (Intl).
export function money(minor) { return formatMoney(minor); }

// Minor units (an integer) as "1234.50" (with the table's decimals, for inputs); no floating point.
export function plainMoney(minor) {
  if (minor === null || minor === undefined) return "—";
  const n = BigInt(minor);
  const neg = n < 0n;
  const a = neg ? -n : n;
  const unit = 10n ** BigInt(EXP);
  return `${neg ? "-" : ""}${a / unit}${EXP ? `.${String(a % unit).padStart(EXP, "0")}` : ""}`;
}

// "12", "12.5" or "12.50" as minor units (1250), with no floating point; null if not money.
export function parseMoney(text) {
  const m = /^\s*(\d{1,9})(?:\.(\d{1,6}))?\s*$/.exec(String(text));
  if (!m || (m[2] || "").length > EXP) return null;
  return Number(BigInt(m[1]) * 10n ** BigInt(EXP) + BigInt((m[2] || "").padEnd(EXP, "0") || "0"));
}

// The card in words, in the player's language: "Ace of spades".
export function cardName(code) {
  return cardWords(code);
}

export function cardLabel(code) {
  return `${code[0] === "T" ? "10" : code[0]}${SUIT_SYMBOLS[code[1]]}`;
}

// A card face as SVG: the rank and suit in two corners (the lower one turned) and a large
// suit in the middle, in the card's colour (currentColor), legible at a phone's card size.
const SVG = "http://www.w3.org/2000/svg";
function svgText(text, attrs) {
  const e = document.createElementNS(SVG, "text");
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  e.textContent = text;
  return e;
}
function cardFace(code) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 60 86");
  svg.setAttribute("class", "face");
  svg.setAttribute("aria-hidden", "true");
  const rank = code[0] === "T" ? "10" : code[0], suit = SUIT_SYMBOLS[code[1]];
  const corner = (transform) => {
    const g = document.createElementNS(SVG, "g");
    if (transform) g.setAttribute("transform", transform);
    // "10" is squeezed into the corner's width.
    const wide = rank.length > 1 ? { textLength: 15, lengthAdjust: "spacingAndGlyphs" } : {};
    g.append(svgText(rank, { x: 10, y: 19, "font-size": 17, "font-weight": 700, "text-anchor": "middle", fill: "currentColor", ...wide }),
      svgText(suit, { x: 10, y: 33, "font-size": 13, "text-anchor": "middle", fill: "currentColor" }));
    return g;
  };
  svg.append(corner(""), corner("rotate(180 30 43)"),
    svgText(suit, { x: 30, y: 56, "font-size": 34, "text-anchor": "middle", fill: "currentColor" }));
  return svg;
}

// Renders a card into `el` (face up, face down, or an empty slot).
export function renderCard(el, code, faceDown = false) {
  el.className = el.className.split(" ").filter((c) => !["up", "down", "red", "slot", "dealt"].includes(c)).join(" ");
  el.textContent = "";
  if (code) {
    el.classList.add("up", "dealt");
    if (code[1] === "d" || code[1] === "h") el.classList.add("red");
    el.setAttribute("aria-label", cardName(code));
    el.dataset.card = code;
    el.append(cardFace(code));
  } else if (faceDown) {
    el.classList.add("down", "dealt");
    el.setAttribute("aria-label", t("face_down"));
    el.dataset.card = "down";
  } else {
    el.classList.add("slot");
    el.setAttribute("aria-label", t("no_card"));
    el.dataset.card = "";
  }
}

export async function api(path, body) {
  const init = body === undefined ? { method: "GET" } : {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
  };
  init.credentials = "same-origin";
  const res = await fetch(path, init);
  let data = {};
  try { data = await res.json(); } catch { /* empty body */ }
  if (!res.ok) {
    const err = new Error(data.message || `${res.status} ${res.statusText}`);
    err.code = data.error;
    err.status = res.status;
    if (Number.isInteger(data.retry_after_ms)) err.retryAfterMs = data.retry_after_ms;
    if (typeof data.scope === "string") err.scope = data.scope;
    throw err;
  }
  return data;
}

// What this browser was shown before each deal, kept so that the history page can compare
// the reveals with it too. At most 300 rounds.
const SHOWN_KEY = "reddog.shown";
export function rememberShown(round) {
  let all = {};
  try { all = JSON.parse(localStorage.getItem(SHOWN_KEY) || "{}"); } catch { all = {}; }
  if (all[round.round_id]) return;
  all[round.round_id] = { commitment: round.commitment, nonce: round.nonce, table_id: round.table_id, decks: round.decks, shown_ms: Date.now() };
  const ids = Object.keys(all);
  if (ids.length > 300) for (const id of ids.sort((a, b) => all[a].shown_ms - all[b].shown_ms).slice(0, ids.length - 300)) delete all[id];
  localStorage.setItem(SHOWN_KEY, JSON.stringify(all));
}
// The player's record of each round this browser played (record.js), for the history page.
const RECORD_KEY = "reddog.records";
export function rememberRecord(record) {
  let all = {};
  try { all = JSON.parse(localStorage.getItem(RECORD_KEY) || "{}"); } catch { all = {}; }
  all[record.round_id] = { ...record, kept_ms: Date.now() };
  const ids = Object.keys(all);
  if (ids.length > 300) for (const id of ids.sort((a, b) => all[a].kept_ms - all[b].kept_ms).slice(0, ids.length - 300)) delete all[id];
  try { localStorage.setItem(RECORD_KEY, JSON.stringify(all)); } catch { /* storage full: the history page re-checks from the stored round */ }
}
export function recordFor(roundId) {
  try { return JSON.parse(localStorage.getItem(RECORD_KEY) || "{}")[roundId] || null; } catch { return null; }
}
export function shownFor(roundId) {
  try { return JSON.parse(localStorage.getItem(SHOWN_KEY) || "{}")[roundId] || null; } catch { return null; }
}

export function describeHand(round) {
  if (!round.hand_class) return "";
  if (round.hand_class === "pair") return t("pair");
  if (round.hand_class === "consecutive") return t("consecutive");
  return t("spread", { n: round.spread });
}

// The seats as the page displays them: each seat of a several-seat round; for one seat, the
// round's own fields. The outcome text and the player's record (record.js) both read this,
// so the record is exactly what the screen says.
export function displaySeats(round) {
  if (round.seats && round.seats.length > 1) return round.seats;
  return [{ bet: round.bet, decision: round.decision, stake: round.stake, outcome: round.outcome, rule: round.rule,
    odds: round.odds, returned: round.returned }];
}

export function describeOutcome(round) {
  if (round.state === "voided") return t("voided", { bet: money(round.bet) });
  if (!round.outcome && !(round.seats && round.seats.length > 1)) return "";
  if (round.seats && round.seats.length > 1) {
    return displaySeats(round).map((x, k) => `${t("seat", { n: k + 1 })}: ${describeOutcome({ ...x, state: round.state, seats: null })}`).join(" · ");
  }
  const why = round.rule ? t(`r_${round.rule}`) : "";
  const odds = round.odds;
  if (round.outcome === "win") return t("win", { returned: money(round.returned), stake: money(round.stake), why, odds });
  if (round.outcome === "push") return t("push", { returned: money(round.returned), why });
  return t("lose", { stake: money(round.stake), why });
}

// A settled seat's result on its spot: the outcome word and the NET amount — what the seat
// won or lost, the stake counted — so that a push reads "Push €0.00", never as a gain
// ("Win +€5.00", "Lose -€5.00"); a voided round's seat was refunded: net zero. The amount
// credited is in the outcome line and the history. Returns [word, amount].
export function seatResult(x, voided = false) {
  if (voided) return [t("seat_voided"), formatNet(0)];
  if (!x?.outcome) return ["", ""];
  const net = BigInt(x.returned || 0) - BigInt(x.stake || 0);
  const word = x.outcome === "win" ? t("seat_win") : x.outcome === "push" ? t("seat_push") : t("seat_lose");
  return [word, formatNet(net)];
}

// A line of the player's record checks ("Checks and reveal"): amounts as money, outcomes in
// the language; `shown / expected`.
export function recordCheckValue(field, value) {
  const key = /^seat\d+\.(\w+)$/.exec(field)?.[1] ?? field;
  const text = String(value ?? "");
  if (["bet", "stake", "returned"].includes(key) && /^\d+$/.test(text)) return formatMoney(text);
  if (key === "balance") return text.replace(/\d+/g, (d) => formatMoney(d));
  if (key === "outcome" && hasKey(`vc_o_${text}`)) return t(`vc_o_${text}`);
  return text;
}

// A record field in the player's language ("seat 2: the amount credited").
export function fieldWords(field) {
  const words = {};
  for (const k of ["cards", "hand", "seats", "bet", "decision", "stake", "outcome", "returned", "balance", "transcripts", "commitment", "rules_digest"]) words[k] = t(`f_${k}`);
  return describeField(field, words, (n, w) => t("f_seat", { n, what: w }));
}

// An error from the platform's API in the player's language: a known stable code
// (demo/src/web.rs, `error`) from the catalogue, with `params` the page knows (limits) and
// the figures the server's text carries (seconds, times, a request id); the server's own
// text for an unknown code, or when the figure it needs is missing. `invalid` names the form
// ("login", "limits") whose "invalid" answers the catalogue explains.
export function errorText(e, params = {}) {
  const text = String(e?.message || e || "");
  const code = e?.code;
  const iso = /\d{4}-\d\d-\d\dT[0-9:.]+Z/.exec(text);
  const when = iso ? Date.parse(iso[0]) : NaN;
  const p = { ...params };
  switch (code) {
    case "too_many_attempts": {
      const m = /(\d+) s\b/.exec(text);
      const secs = Number.isInteger(e?.retryAfterMs) ? Math.ceil(e.retryAfterMs / 1000) : m ? Number(m[1]) : NaN;
      if (Number.isNaN(secs)) return text;
      p.secs = formatNumber(secs);
      break;
    }
    case "pin_locked":
      if (Number.isNaN(when)) return text;
      p.time = formatDate(when);
      break;
    case "once_per_week":
      if (Number.isNaN(when)) return text;
      p.date = formatDate(when, EASTERN);
      break;
    case "internal": {
      const m = /request id (\w+)/.exec(text);
      if (!m) return text;
      p.id = m[1];
      break;
    }
    case "invalid":
      if (params.invalid === "login") return t("err_invalid_login");
      if (params.invalid === "limits" && p.min !== undefined && p.max !== undefined) return t("err_invalid_limits", p);
      return text;
    case "bet_out_of_range":
      if (p.min === undefined || p.max === undefined) return text;
      break;
    default:
  }
  // A sign-in's wait, worded by its scope: the name's wait (not the player's doing, with the
  // way back), this device's, the recovery code's; a pair's or an address's by the default.
  if (code === "too_many_attempts" && hasKey(`err_too_many_${e?.scope}`)) return t(`err_too_many_${e.scope}`, p);
  return code && hasKey(`err_${code}`) ? t(`err_${code}`, p) : text;
}
