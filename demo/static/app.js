// The Red Dog table: plain JavaScript, no framework. The platform (this page's server)
// keeps the tokens; the page sees commitments, cards, results and reveals, and verifies
// every reveal itself (verify.js).
import { checkRecord } from "./record.js";
import { verifyRound, signatureState, api, money, plainMoney, parseMoney, renderCard, cardName, displaySeats, rememberShown, shownFor, rememberRecord, describeOutcome, describeHand, setMinorUnitExponent, minorPerMajor, fieldWords, errorText, seatResult, recordCheckValue } from "./ui.js";
import { t, noteText, LANGS, chooseLang, rememberLang, setLang, lang, translatePage, formatDate, formatNumber, EASTERN, checkText, checkName, malformedTexts } from "./i18n.js";

const $ = (id) => document.getElementById(id);

// ------------------------------------------------------------------ options (lower left)
const OPT = { sound: "reddog.sound", voice: "reddog.voice", animation: "reddog.animation" };
const DEFAULTS = { sound: "on", voice: "off", animation: "on" };
const opt = (k) => (localStorage.getItem(OPT[k]) || DEFAULTS[k]) === "on";
// Animation is read once, at load: a change takes effect after a reload, as the sheets say.
const ANIMATION_AT_LOAD = opt("animation");
document.documentElement.classList.toggle("anim", ANIMATION_AT_LOAD);
const REDUCED = globalThis.matchMedia ? globalThis.matchMedia("(prefers-reduced-motion: reduce)") : null;
// Motion plays when the Animation option was on at load and the system asks for no less.
const motion = () => ANIMATION_AT_LOAD && !REDUCED?.matches;

// Table sounds made from filtered noise (no audio files): a chip's click, a card's swish,
// a stack of chips pushed over for a win; nothing for a loss but the card.
let audio = null;
function burst(at, ms, freq, q, gain) {
  const n = Math.ceil(audio.sampleRate * ms / 1000);
  const buf = audio.createBuffer(1, n, audio.sampleRate);
  const d = buf.getChannelData(0);
  for (let i = 0; i < n; i++) d[i] = (Math.random() * 2 - 1) * (1 - i / n) ** 3;
  const src = audio.createBufferSource(), f = audio.createBiquadFilter(), g = audio.createGain();
  src.buffer = buf;
  f.type = "bandpass"; f.frequency.value = freq; f.Q.value = q;
  g.gain.value = gain;
  src.connect(f).connect(g).connect(audio.destination);
  src.start(audio.currentTime + at);
}
const SOUNDS = {
  chip: [[0, 25, 3200, 6, 0.5], [0.035, 20, 2600, 6, 0.35]],
  card: [[0, 110, 1800, 0.8, 0.4]],
  win: [[0, 110, 1800, 0.8, 0.4], ...[0.15, 0.2, 0.24, 0.29, 0.33].map((at) => [at, 25, 3000, 6, 0.4])],
  lose: [[0, 110, 1800, 0.8, 0.4]],
};
function sound(kind) {
  if (!opt("sound")) return;
  try {
    audio = audio || new (globalThis.AudioContext || globalThis.webkitAudioContext)();
    for (const args of SOUNDS[kind]) burst(...args);
  } catch { /* no audio device */ }
}
const canSpeak = "speechSynthesis" in globalThis && "SpeechSynthesisUtterance" in globalThis;
function say(text) {
  if (!opt("voice") || !canSpeak) return;
  try {
    const u = new SpeechSynthesisUtterance(text);
    u.lang = lang();
    speechSynthesis.cancel();
    speechSynthesis.speak(u);
  } catch { /* none */ }
}

// ------------------------------------------------------------------ state
const S = {
  state: null,        // /api/state
  round: null,        // the open round: committed (shown commitment) or dealt (deciding)
  shown: null,        // the round whose cards are on the table
  bets: [0],          // one bet per seat, minor units (1 to the table's max_seats seats)
  seat: 0,            // the seat chips, arrows and keys act on
  lastBets: null,     // the last round's bets, for the 0 key
  busy: false,
  follow: false,      // after the next render: scroll to the cards and the deciding seat
  seedCustom: false,
  record: null,       // the player's record of the round in play (record.js)
  verification: null, // the "Last round" box's round and its verification (else a placeholder):
                      //   { round, pending, result, rec, error }
};

// ------------------------------------------------------------------ the player's record
// Everything the page saw and did in a round, kept to compare with the reveal at the end.
function startRecord(round, { before, debited, bets }) {
  S.record = {
    round_id: round.round_id, commitment: round.commitment, rules_digest: round.rules_digest || undefined,
    seats: bets.map((bet) => ({ bet: String(bet), action: null })), transcripts: [],
    balance: { before, debited }, shown: null,
  };
}
function noteAnswer(round) {
  if (!S.record || S.record.round_id !== round.round_id) return;
  for (const t of round.transcripts || []) if (!S.record.transcripts.includes(t)) S.record.transcripts.push(t);
}
function noteShown(round, balanceAfter) {
  if (!S.record || S.record.round_id !== round.round_id) return;
  S.record.shown = {
    cards: [...(round.cards || [])], hand_class: round.hand_class, spread: round.spread,
    seats: displaySeats(round).map((x) => ({ outcome: x.outcome, decision: x.decision, stake: x.stake, returned: x.returned })),
  };
  S.record.balance.after = balanceAfter;
  rememberRecord(S.record);
}

function randomSeed() {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

const limits = () => S.state?.limits || { min_bet: 0, max_bet: 0 };
const balance = () => S.state?.player?.balance ?? 0;
const deciding = () => S.round?.state === "dealt";
const maxSeats = () => Math.max(1, S.state?.table?.max_seats || 1);
const betOf = () => S.bets[S.seat] || 0;
const totalBet = () => S.bets.reduce((a, b) => a + b, 0);
// The seat a decision is asked of: the first seat of the round that has not decided.
const decidingSeat = () => deciding() ? (S.round.seats || []).findIndex((x) => !x.decision) : -1;

function canDeal() {
  const l = limits();
  return !S.busy && !S.reconnecting && S.round?.state === "committed" && S.bets.every((b) => b >= l.min_bet && b <= l.max_bet)
    && totalBet() <= balance() && $("client-seed").value.length > 0;
}
const canRaise = () => !S.busy && !S.reconnecting && decidingSeat() >= 0 && balance() >= (S.round.seats[decidingSeat()]?.bet || 0);
const canStand = () => !S.busy && !S.reconnecting && decidingSeat() >= 0;

// Deal disabled: say why.
function whyNoDeal() {
  const l = limits();
  if (S.round?.state !== "committed") return "";
  const empty = S.bets.findIndex((b) => b === 0);
  if (empty >= 0) return S.bets.length > 1 ? t("seat_no_bet", { n: empty + 1 }) : "";
  const low = S.bets.findIndex((b) => b < l.min_bet);
  if (low >= 0) return S.bets.length > 1 ? t("min_bet_seat", { min: money(l.min_bet), n: low + 1 }) : t("min_bet", { min: money(l.min_bet) });
  if (totalBet() > balance()) return t("balance_short", { balance: money(balance()), bets: money(totalBet()) });
  return "";
}

// Text that follows the language. A message is kept as the function that words it (figures
// included, as money() formats them in the current language), so a switch of language
// rewords what is on screen instead of leaving the old language there.
const liveText = new Map(); // element id -> () => string
function setText(id, words) {
  if (typeof words === "function") liveText.set(id, words); else liveText.delete(id);
  $(id).textContent = (typeof words === "function" ? words() : words) || "";
}
function rewordLiveText() { for (const [id, words] of liveText) $(id).textContent = words() || ""; }
// The message line under the table: `words` is a function of the language, or "" for none.
function message(words) { setText("message", words); }

// ------------------------------------------------------------------ bet changes
function setBet(v) {
  const l = limits();
  let b = Math.max(0, v);
  if (b > l.max_bet) { b = l.max_bet; message(() => t("max_bet_is", { max: money(l.max_bet) })); }
  else message("");
  S.bets[S.seat] = b;
  render();
}
function addChip(v) { if (!deciding() && !S.busy) { sound("chip"); setBet(betOf() + v); } }
function removeChip(v) { if (!deciding() && !S.busy) { sound("chip"); setBet(betOf() - v); } }
// Seats: select seat n (0-based), opening empty seats up to it; remove the selected seat.
function selectSeat(n) {
  if (deciding() || S.busy || n < 0 || n >= maxSeats()) return;
  while (S.bets.length <= n) S.bets.push(0);
  S.seat = n;
  message(S.bets.length > 1 ? () => t("seat_selected", { n: n + 1 }) : "");
  render();
}
function removeSeat() {
  if (deciding() || S.busy || S.bets.length <= 1) return;
  S.bets.splice(S.seat, 1);
  S.seat = Math.min(S.seat, S.bets.length - 1);
  render();
}
// Up/Down: ±1.00 (Shift: ±10.00) within the limits: from no bet, up goes to the minimum;
// at the minimum, down removes the bet.
function stepBet(units) {
  if (deciding() || S.busy) return;
  const l = limits(), step = units * minorPerMajor();
  const b = betOf();
  if (step > 0) setBet(b < l.min_bet ? l.min_bet : Math.min(b + step, l.max_bet));
  else setBet(b <= l.min_bet ? 0 : Math.max(b + step, l.min_bet));
}
function clearBet() { if (!deciding() && !S.busy) setBet(0); }
// 0: the last round's bets on the same seats.
function repeatBet() {
  if (deciding() || S.busy) return;
  if (!S.lastBets) { message(() => t("no_previous_bet")); return; }
  const max = limits().max_bet;
  S.bets = S.lastBets.slice(0, maxSeats()).map((b) => Math.min(b, max));
  S.seat = Math.min(S.seat, S.bets.length - 1);
  message("");
  render();
}

// ------------------------------------------------------------------ rendering
function renderChips() {
  const box = $("chips");
  // Made once; the labels follow the language.
  for (const b of box.querySelectorAll("button")) b.setAttribute("aria-label", t("chip_label", { amount: money(Number(b.dataset.value)) }));
  if (box.childElementCount) return;
  for (const v of S.state.table.chips) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = `chip chip-${v}`;
    b.dataset.value = v;
    b.textContent = plainMoney(v).replace(/\.0+$/, "");
    b.setAttribute("aria-label", t("chip_label", { amount: money(v) }));
    b.addEventListener("click", () => addChip(v));
    b.addEventListener("contextmenu", (e) => { e.preventDefault(); removeChip(v); });
    box.append(b);
  }
}

// The betting circle: the selected seat's chips, or while deciding the deciding seat's bet
// as the round shows it (the amount the player's record checks).
function renderStack() {
  const ds = decidingSeat();
  const k = ds >= 0 ? ds : S.seat;
  const amount = ds >= 0 ? displaySeats(S.round)[ds]?.bet || 0 : betOf();
  $("bet-stack").replaceWith(Object.assign(chipStack(amount), { id: "bet-stack" }));
  $("circle-amount").textContent = amount ? money(amount) : "";
  $("circle-label").textContent = S.bets.length > 1 || ds >= 0 && (S.round?.seats || []).length > 1 ? t("seat", { n: k + 1 }) : "";
}

// The seats: one spot per seat on the felt (`data-seat`), each with its button (select it),
// its chips stacked by denomination and, in play, its decision; after settlement its result
// as the seat's net ("Win +€5.00", "Push €0.00", "Lose -€5.00"; the amount credited is in
// the outcome line and the history) until the next deal. The deciding seat is highlighted
// and takes the focus; on a phone the rail with Raise and Stand sticks to the screen's foot.
function chipStack(amount) {
  const stack = document.createElement("span");
  stack.className = "stack";
  stack.setAttribute("aria-hidden", "true");
  let rest = amount || 0;
  for (const v of [...S.state.table.chips].sort((a, b) => b - a)) {
    while (rest >= v && stack.childElementCount < 12) {
      const c = document.createElement("span");
      c.className = `mini chip-${v}`;
      stack.append(c);
      rest -= v;
    }
  }
  return stack;
}
function renderSeats() {
  const box = $("seats");
  // The deciding seat's spot keeps the focus across a redraw (the next seat to decide takes it).
  const hadFocus = Boolean(document.activeElement?.closest?.("#seats .spot"));
  box.textContent = "";
  const inPlay = deciding();
  const round = S.shown && S.shown.state !== "committed" ? S.shown : null;
  const played = round ? displaySeats(round) : [];
  const settled = !inPlay && round && (round.state === "settled" || round.state === "voided");
  const count = inPlay ? played.length : S.bets.length;
  const ds = decidingSeat();
  box.classList.toggle("many", count > 3);
  for (let k = 0; k < count; k++) {
    const spot = document.createElement("div");
    spot.className = "spot";
    spot.dataset.seat = k;
    const x = inPlay || settled ? played[k] : null;
    const b = document.createElement("button");
    b.type = "button";
    b.className = "seat";
    b.dataset.seat = k;
    const bet = inPlay ? x?.bet : S.bets[k];
    const parts = [t("seat", { n: k + 1 }), money(bet || 0)];
    if (inPlay && x?.decision) parts.push(x.decision === "raise" ? t("seat_raised") : t("seat_stood"));
    if (inPlay && k === ds) parts.push(t("seat_to_decide"));
    // One line on a wide screen ("Seat 1 · €5.00 · to decide"), a line each in a compact grid
    // (the separators then only for a screen reader).
    parts.forEach((part, i) => {
      if (i) b.append(Object.assign(document.createElement("span"), { className: "sep", textContent: " · " }));
      b.append(Object.assign(document.createElement("span"), { className: "part", textContent: part }));
    });
    b.setAttribute("aria-pressed", String(!inPlay && k === S.seat));
    b.disabled = inPlay || S.busy;
    b.addEventListener("click", () => selectSeat(k));
    spot.append(chipStack(inPlay ? (x?.stake ?? x?.bet) : S.bets[k]), b);
    if (settled && x) {
      const res = document.createElement("span");
      res.className = "result";
      res.dataset.outcome = x.outcome || (round.state === "voided" ? "voided" : "");
      const [word, amount] = seatResult(x, round.state === "voided");
      res.dataset.net = amount;
      res.append(Object.assign(document.createElement("span"), { textContent: word }), " ",
        Object.assign(document.createElement("span"), { className: "net", textContent: amount }));
      spot.append(res);
    }
    if (inPlay && k === ds) {
      spot.classList.add("deciding");
      // Focus follows the seat that must decide (the table's keys act from there).
      spot.tabIndex = -1;
      spot.setAttribute("role", "group");
      spot.setAttribute("aria-label", parts.join(" · "));
    }
    box.append(spot);
  }
  if (hadFocus) box.querySelector(".spot.deciding")?.focus({ preventScroll: true });
  $("add-seat").hidden = S.bets.length >= maxSeats();
  $("add-seat").disabled = inPlay || S.busy;
  $("remove-seat").hidden = S.bets.length <= 1;
  $("remove-seat").disabled = inPlay || S.busy;
}

// After a deal or a decision: the cards, and the seat that must decide, scrolled into view
// above the rail (which sticks to the bottom of a phone's screen), the cards first when both
// do not fit; and the focus on that seat's spot (from Raise or Stand too: the table's keys
// act from there, and a screen reader names the seat) unless the player is elsewhere.
function followDecider() {
  const cards = document.querySelector(".felt .cards");
  if (!cards || $("game").hidden) return;
  const spot = document.querySelector("#seats .spot.deciding");
  const rail = document.querySelector(".rail");
  const covered = getComputedStyle(rail).position === "sticky" ? rail.getBoundingClientRect().height : 0;
  const view = (globalThis.visualViewport?.height || innerHeight) - covered;
  const margin = 8;
  const top = cards.getBoundingClientRect().top;
  const bottom = (spot || cards).getBoundingClientRect().bottom;
  // Scroll by dy with top - dy >= margin and bottom - dy <= view - margin, as little as may be.
  const hi = top - margin, lo = bottom - (view - margin);
  const dy = lo > hi ? hi : lo > 0 ? lo : hi < 0 ? hi : 0;
  if (Math.abs(dy) >= 1) scrollBy({ top: dy, behavior: motion() ? "smooth" : "instant" });
  const active = document.activeElement;
  const ours = !active || active === document.body || active.disabled || active.closest?.("#seats") || active.id === "raise" || active.id === "stand";
  if (spot && ours) spot.focus({ preventScroll: true });
}

function renderTable() {
  const r = S.shown;
  const cards = r?.cards || [];
  renderCard($("card1"), cards[0]);
  renderCard($("card2"), cards[1]);
  const third = cards[2];
  const faceDown = r && r.state === "dealt";
  renderCard($("card3"), third, faceDown);
  if (r && r.hand_class === "consecutive") $("card3").dataset.card = "none";
  const marker = $("marker");
  if (r && r.hand_class) {
    marker.hidden = false;
    marker.dataset.hand = r.hand_class;
    marker.dataset.spread = r.spread || 0;
    marker.textContent = r.hand_class === "non_consecutive"
      ? t("marker", { n: r.spread, odds: r.spread_odds }) : describeHand(r);
  } else {
    marker.hidden = true;
  }
  const out = $("outcome");
  out.dataset.hand = r?.hand_class || "";
  out.dataset.outcome = r?.outcome || (r?.state === "voided" ? "voided" : "");
  out.dataset.decision = r?.decision || "";
  out.dataset.returned = r?.returned ?? "";
  out.dataset.roundId = r?.round_id || "";
  if (r && r.state === "dealt") out.textContent = t("raise_or_stand", { hand: describeHand(r) });
  else if (r && r.state === "settled" && (r.seats || []).length > 1) {
    // Each seat's result is on its spot; here the hand and the totals.
    const sum = (f) => r.seats.reduce((a, x) => a + Number(x[f] || 0), 0);
    out.textContent = t("seats_total", { hand: describeHand(r), n: formatNumber(r.seats.length), returned: money(sum("returned")), stake: money(sum("stake")) });
  } else if (r) out.textContent = describeOutcome(r);
  else out.textContent = t("place_bet");
  animateCards(r);
}

// ------------------------------------------------------------------ motion
// The deal shown as it happens: each card slides in from the shoe (the felt's top right)
// when it first shows, one after another, the red dog marker after the first two; a
// face-down third card turned over flips. Chips go from the rack to each seat's spot at the
// deal and, at settlement, back to the player's balance (a win, a push) or to the house (a
// loss). Web Animations, started at the moment a card first shows, so every deal plays
// (a CSS class kept from the last round would not restart). None when the Animation option
// was off at load or the system asks for reduced motion. The badge waits for the cards
// (cardsShown), so it never speaks of cards not yet visible.
const DEAL_MS = 260, STAGGER_MS = 170;
let onTable = { round: "", cards: ["", "", ""], marker: false };
let cardMotion = [];
function animateCards(r) {
  const id = r?.round_id || "";
  const slots = ["card1", "card2", "card3"].map($);
  const cards = slots.map((el) => el.dataset.card || "");
  const marker = !$("marker").hidden;
  const before = onTable.round === id ? onTable : { cards: ["", "", ""], marker: false };
  onTable = { round: id, cards, marker };
  if (!motion()) return;
  let k = 0;
  slots.forEach((el, i) => {
    const code = cards[i];
    if (!code || code === "none" || code === before.cards[i]) return;
    const frames = before.cards[i] === "down"
      ? [{ transform: "perspective(400px) rotateY(90deg)" }, { transform: "none" }]
      : [{ transform: "translate(140px, -90px) rotate(-14deg)", opacity: 0 }, { transform: "none", opacity: 1 }];
    cardMotion.push(el.animate(frames, { duration: DEAL_MS, delay: k * STAGGER_MS, easing: "ease-out", fill: "backwards" }));
    k++;
  });
  if (marker && !before.marker) {
    cardMotion.push($("marker").animate([{ transform: "scale(.4)", opacity: 0 }, { transform: "none", opacity: 1 }],
      { duration: DEAL_MS, delay: Math.min(k, 2) * STAGGER_MS, easing: "ease-out", fill: "backwards" }));
  }
}
// Resolves once every card dealt so far is in place (at once without motion).
async function cardsShown() {
  const running = cardMotion;
  cardMotion = [];
  await Promise.all(running.map((a) => a.finished.catch(() => {})));
}

const centre = (r) => [r.left + r.width / 2, r.top + r.height / 2];
let chipsFor = { round: "", settled: false };
function animateChips(r) {
  if (!r || r.state === "committed") return;
  const settled = r.state === "settled" || r.state === "voided";
  const fresh = chipsFor.round !== r.round_id;
  const wasSettled = !fresh && chipsFor.settled;
  chipsFor = { round: r.round_id, settled };
  if (!motion()) return;
  const spots = [...document.querySelectorAll("#seats .spot")];
  if (fresh) {
    // The bets, from the rack to each spot.
    const [fx, fy] = centre($("chips").getBoundingClientRect());
    spots.forEach((spot, k) => {
      const stack = spot.querySelector(".stack");
      if (!stack?.childElementCount) return;
      const [tx, ty] = centre(stack.getBoundingClientRect());
      stack.animate([{ transform: `translate(${fx - tx}px, ${fy - ty}px)`, opacity: 0.3 }, { transform: "none", opacity: 1 }],
        { duration: 320, delay: k * 50, easing: "ease-out", fill: "backwards" });
    });
  }
  if (settled && !wasSettled) {
    // Back: each seat's credit to the player's balance; a lost stake to the house.
    const seats = displaySeats(r);
    const house = centre(document.querySelector(".felt .cards").getBoundingClientRect());
    const player = centre($("info-balance").getBoundingClientRect());
    spots.forEach((spot, k) => {
      const x = seats[k];
      const at = spot.querySelector(".stack")?.getBoundingClientRect();
      if (!x || !at) return;
      const back = Number(r.state === "voided" ? x.bet : x.returned) || 0;
      const ghost = chipStack(back || x.stake || x.bet);
      ghost.classList.add("flying");
      Object.assign(ghost.style, { left: `${at.left}px`, top: `${at.top}px` });
      document.body.append(ghost);
      const [gx, gy] = centre(ghost.getBoundingClientRect());
      const [tx, ty] = back ? player : house;
      ghost.animate([{ transform: "none", opacity: 1 }, { transform: `translate(${tx - gx}px, ${ty - gy}px) scale(.6)`, opacity: 0 }],
        { duration: 600, delay: 300 + k * 60, easing: "ease-in", fill: "both" }).finished.catch(() => {}).finally(() => ghost.remove());
    });
  }
}

function renderFairness() {
  const r = S.round;
  const pending = r && (r.state === "committed" || r.state === "dealt");
  $("f-commitment").textContent = pending ? r.commitment : "—";
  $("f-nonce").textContent = pending ? r.nonce : "—";
  $("f-round").textContent = pending ? r.round_id : "—";
  $("f-table").textContent = pending ? `${r.table_id} · ${r.decks}` : "—";
  // Collapsed by default: one plain line with the short forms; the full values on expand.
  $("f-rules").textContent = pending && r.rules_digest ? r.rules_digest : "—";
  const short = (hex) => `${hex.slice(0, 8)}…${hex.slice(-4)}`;
  $("fair-summary").textContent = !pending ? t("fair_none")
    : r.rules_digest ? t("fair_summary", { c: short(r.commitment), r: short(r.rules_digest) })
    : t("fair_summary_norules", { c: short(r.commitment) });
  $("client-seed").disabled = !r || r.state !== "committed" || S.busy;
  if (r && r.state === "dealt" && r.client_seed) $("client-seed").value = r.client_seed;
}

function render() {
  const st = S.state;
  document.body.dataset.busy = S.busy ? "1" : "0";
  if (!st) return;
  $("game").dataset.phase = deciding() ? "deciding" : "betting";
  renderChips();
  $("who").textContent = st.player ? t("signed_in", { name: st.player.name }) : "";
  $("info-name").textContent = st.player?.name || "";
  $("info-balance").textContent = money(balance());
  $("info-balance").dataset.minor = balance();
  $("info-bet").textContent = S.bets.length > 1 ? t("bet_seats", { bet: money(totalBet()), n: formatNumber(S.bets.length) }) : money(totalBet());
  $("info-bet").dataset.minor = totalBet();
  const l = limits();
  $("info-limits").textContent = t(l.player_max_bet ? "limits_range_mine" : "limits_range", { min: money(l.min_bet), max: money(l.max_bet) });
  $("info-last").textContent = S.lastBets ? S.lastBets.map(money).join(" + ") : "—";
  $("deal").disabled = !canDeal();
  $("deal-why").textContent = !S.busy && $("deal").disabled ? whyNoDeal() : "";
  $("raise").disabled = !canRaise();
  $("stand").disabled = !canStand();
  const ds = decidingSeat();
  const multi = (S.round?.seats || []).length > 1;
  $("raise-label").textContent = ds >= 0 && multi ? t("raise_seat", { n: ds + 1 }) : t("raise");
  $("stand-label").textContent = ds >= 0 && multi ? t("stand_seat", { n: ds + 1 }) : t("stand");
  for (const b of $("chips").querySelectorAll("button")) b.disabled = deciding() || S.busy;
  $("clear").disabled = deciding() || S.busy;
  $("repeat").disabled = deciding() || S.busy || !S.lastBets;
  renderSeats();
  renderStack();
  renderTable();
  animateChips(S.shown);
  renderFairness();
  renderLimits();
  if (S.follow) { S.follow = false; followDecider(); }
}

function renderLimits() {
  const l = limits();
  const figures = { min: money(l.table_min), max: money(l.table_max), mine: money(l.max_bet) };
  $("limits-text").textContent = l.next_change_ms
    ? t("limits_next", { ...figures, date: formatDate(l.next_change_ms, EASTERN) }) : t("limits_weekly", figures);
  const input = $("limits-max");
  input.min = plainMoney(l.table_min);
  input.max = plainMoney(l.table_max);
}

// ------------------------------------------------------------------ flow
async function refresh() {
  S.state = await api("/api/state");
  setMinorUnitExponent(S.state.table.minor_unit_exponent, S.state.table.currency);
  if (S.state.player) applyLang(chooseLang(S.state.player.name));
  if (!S.state.player) { showLogin(); return; }
  if (!S.lastBets && S.state.last_bet) S.lastBets = [S.state.last_bet];
  if (S.state.engine_error) message(() => t("engine_down"));
  S.round = S.state.round;
  if (S.round?.state === "dealt") {
    S.shown = S.round; S.bets = S.round.seats.map((x) => x.bet); S.seat = 0;
    S.follow = true;
    message(() => t("resumed"));
    if (S.record?.round_id !== S.round.round_id) {
      // Resumed after a reload: the bets (and any raise already decided) had left the wallet
      // before this page saw the balance.
      startRecord(S.round, { before: balance(), debited: S.round.stake ?? S.round.bet, bets: S.round.seats.map((x) => x.bet) });
      S.round.seats.forEach((x, k) => { if (x.decision) S.record.seats[k].action = x.decision; });
    }
    noteAnswer(S.round);
  }
  S.bets = S.bets.map((b) => Math.min(b, limits().max_bet));
  try {
    await ensureCommitment();
  } finally {
    // The table appears once it shows the player's figures (also when the engine is down).
    render();
    $("login").hidden = true;
    $("game").hidden = false;
    $("logout").hidden = false;
    $("logout-all").hidden = false;
  }
}

// A round needs a commitment shown before the client seed is fixed: ask for one whenever
// no round is open.
async function ensureCommitment() {
  if (!S.round || !["committed", "dealt"].includes(S.round.state)) {
    S.round = await api("/api/round", {});
  }
  if (S.round.state === "committed") {
    rememberShown(S.round);
    if (!S.seedCustom || !$("client-seed").value) $("client-seed").value = randomSeed();
  }
  scheduleRenewal();
}

// ------------------------------------------------------------------ renewal and outages
// A commitment is renewed before the platform stops dealing on it (`renew_in_ms`, relative
// to the answer, so the clocks need not agree): an idle player never meets an expired one.
let renewTimer = null;
function scheduleRenewal() {
  clearTimeout(renewTimer);
  const r = S.round;
  if (!r || r.state !== "committed" || typeof r.renew_in_ms !== "number") return;
  const id = r.round_id;
  renewTimer = setTimeout(async () => {
    if (S.busy || S.reconnecting || S.round?.round_id !== id) { if (S.round?.round_id === id) scheduleRenewal(); return; }
    S.busy = true;
    render();
    try {
      S.round = null;
      await ensureCommitment();
      if (S.round.round_id !== id) message(() => t("renewed"));
    } catch (e) {
      if (unreachable(e)) reconnect(e, null); else message(() => errorText(e));
    } finally { S.busy = false; render(); }
  }, r.renew_in_ms + 250);
}

// No answer: the platform cannot be reached (the fetch itself failed) or the engine is
// unavailable (503). Anything else is a definite answer.
const unreachable = (e) => e instanceof TypeError || e.status === 503;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// After an outage the page reconnects by itself (1, 2, 4, 5, 5 … s apart) and says what
// happened to the round it had open: settled (and verified like any round), voided and
// refunded, waiting for a decision, or still waiting for the engine.
async function reconnect(e, roundId) {
  if (S.reconnecting) return;
  S.reconnecting = true;
  const what = () => t(e instanceof TypeError ? "lost_platform" : "lost_engine");
  $("connection").dataset.state = "reconnecting";
  message(() => t(roundId ? "reconnecting_kept" : "reconnecting", { what: what() }));
  render();
  for (let k = 0; ; k++) {
    await sleep(Math.min(1000 * 2 ** k, 5000));
    try {
      const round = roundId ? await api(`/api/round/${encodeURIComponent(roundId)}`) : null;
      if (round && ["betting", "deciding", "settling"].includes(round.state)) {
        message(() => t("reconnecting_wait", { what: what() }));
        continue;
      }
      S.reconnecting = false;
      await refresh();
      $("connection").dataset.state = "connected";
      if (round && (round.state === "settled" || round.state === "voided")) {
        const seen = shownFor(round.round_id);
        round.expect = { commitment: seen?.commitment ?? round.commitment, nonce: seen?.nonce ?? round.nonce,
          round_id: round.round_id, table_id: seen?.table_id ?? round.table_id, decks: seen?.decks ?? round.decks,
          client_seed: round.client_seed };
        S.shown = round;
        noteAnswer(round);
        noteShown(round, balance());
        render();
        await cardsShown();
        await showVerification(round, S.record?.round_id === round.round_id ? S.record : null);
        message(() => t(round.state === "voided" ? "reconnected_voided" : "reconnected_settled",
          { note: round.note ? ` (${noteText(round.note)})` : "", outcome: describeOutcome(round) }));
      } else if (round?.state === "dealt") {
        message(() => t("reconnected_decide"));
      } else {
        message(() => t("reconnected"));
      }
      render();
      return;
    } catch (err) {
      if (unreachable(err)) continue;
      S.reconnecting = false;
      $("connection").dataset.state = "connected";
      message(() => errorText(err));
      render();
      return;
    }
  }
}

async function run(fn) {
  if (S.busy) return;
  S.busy = true;
  render();
  let lost = null;
  try { await fn(); }
  catch (e) {
    if (unreachable(e)) {
      lost = e;
    } else if (e.code === "signed_out") {
      // The session ended (idle, too old, or signed out everywhere): sign in again.
      S.state = null; S.round = null; S.shown = null;
      showLogin();
      setText("login-message", () => t("session_ended"));
    } else {
      const l = limits();
      message(() => e.code === "commitment_expired" ? t("expired") : errorText(e, { min: money(l.min_bet), max: money(l.max_bet) }));
      if (e.code === "commitment_expired" || e.code === "conflict") {
        try { S.round = null; await refresh(); } catch (err) { if (unreachable(err)) lost = err; }
      }
    }
  }
  finally { S.busy = false; render(); }
  if (lost) reconnect(lost, S.record?.round_id || null);
}

function deal() {
  if (!canDeal()) return;
  run(async () => {
    const shownBefore = { ...S.round };
    const seed = $("client-seed").value;
    const bets = [...S.bets];
    startRecord(S.round, { before: balance(), debited: 0, bets });
    const res = await api("/api/round/deal", { round_id: S.round.round_id, client_seed: seed, bets });
    noteAnswer(res.round);
    // The record keeps the bet the player SENT (`bet`) and the bet the seats show
    // (`shown_bet`): the badge checks both against the reveal (record.js).
    displaySeats(res.round).forEach((x, k) => { if (S.record.seats[k]) S.record.seats[k].shown_bet = String(x.bet); });
    S.state.player.balance = res.balance;
    S.lastBets = bets;
    S.round = res.round;
    S.shown = res.round;
    S.follow = true;
    S.shown.expect = { commitment: shownBefore.commitment, nonce: shownBefore.nonce, round_id: shownBefore.round_id,
      table_id: shownBefore.table_id, decks: shownBefore.decks, client_seed: seed };
    sound("card");
    if (res.round.state === "dealt") {
      message("");
      say(`${res.round.cards.map(cardName).join(t("list_sep"))}. ${t("marker", { n: res.round.spread, odds: res.round.spread_odds })}. `
        + t("raise_or_stand", { hand: describeHand(res.round) }));
    } else {
      await finish(res.round);
    }
  });
}

function decide(action) {
  if (action === "raise" ? !canRaise() : !canStand()) return;
  run(async () => {
    const expect = S.shown?.expect;
    const seat = decidingSeat();
    const mine = S.record?.round_id === S.round.round_id ? S.record.seats[seat] : null;
    if (mine) mine.action = action;
    let res;
    try {
      res = await api("/api/round/decide", { round_id: S.round.round_id, action, seat });
    } catch (e) {
      // No answer: the platform may or may not have recorded the decision; after a restart
      // it settles an undecided seat as a stand.
      if (mine && unreachable(e)) mine.unconfirmed = true;
      throw e;
    }
    noteAnswer(res.round);
    S.state.player.balance = res.balance;
    S.round = res.round;
    S.shown = res.round;
    S.follow = true;
    S.shown.expect = expect || { commitment: res.round.commitment, nonce: res.round.nonce, round_id: res.round.round_id,
      table_id: res.round.table_id, decks: res.round.decks, client_seed: res.round.client_seed };
    if (res.round.state === "dealt") {
      const n = decidingSeat() + 1;
      message(() => t("raise_or_stand", { hand: t("seat", { n }) }));
      return;
    }
    await finish(res.round);
  });
}

async function finish(round) {
  // The round has settled: a message about it in play (resumed, reconnected, raise or
  // stand) no longer holds.
  message("");
  const text = describeOutcome(round);
  sound(round.outcome === "win" ? "win" : round.outcome === "lose" ? "lose" : "card");
  say(`${(round.cards || []).map(cardName).join(t("list_sep"))}. ${describeHand(round)}. ${text}`);
  noteShown(round, balance());
  // The table shows this round — its cards dealt and visible — before the badge says
  // anything about it.
  render();
  await cardsShown();
  await showVerification(round, S.record?.round_id === round.round_id ? S.record : null);
  S.round = null;
  await ensureCommitment();
}

// The language: the switcher in the header, remembered per player in this browser.
function applyLang(l) {
  setLang(l);
  translatePage();
  $("lang").value = lang();
  document.title = `Red Dog — ${t("nav_table")}`;
  paintVerification();
  rewordLiveText();
  if (S.state?.table) renderPaytable();
  render();
}
for (const [code, label] of Object.entries(LANGS)) {
  const o = document.createElement("option");
  o.value = code;
  o.textContent = label;
  o.lang = code;
  $("lang").append(o);
}
$("lang").addEventListener("change", () => {
  rememberLang($("lang").value, S.state?.player?.name);
  applyLang($("lang").value);
});

// The "Last round" box: the verification is computed once per round (verifyRound and
// checkRecord), then painted from the result, and painted again when the language changes.
async function showVerification(round, record) {
  const v = { round, pending: Boolean(round.reveal_json) };
  S.verification = v;
  paintVerification();
  if (!v.pending) return;
  try {
    const expect = { ...(round.expect || {}) };
    // A v1 reveal (an engine from before the round-integrity change) has no table id.
    if (!round.reveal_json.includes('"format":')) delete expect.table_id;
    v.result = await verifyRound(round, expect, S.state?.table?.signing_keys);
    // The reveal alone proves nothing about this screen: compare it with what the page
    // showed and what the player did.
    v.rec = record ? await checkRecord(v.result, record) : null;
  } catch (e) {
    v.error = e;
  }
  v.pending = false;
  // A later round's verification may have started meanwhile: it owns the box.
  if (S.verification === v) paintVerification();
}

// The "Checks and reveal" panel, collapsed: one line in the player's language — how many
// checks passed, what was staked and credited (money as the language writes it).
function paintChecksSummary(round, result, rec) {
  const summary = $("checks-summary");
  const checks = [...(result?.checks || []), ...(rec?.checks || []).filter((c) => c.seen)];
  if (!round || !checks.length) { summary.textContent = t("checks"); return; }
  const seats = displaySeats(round);
  const sum = (f) => seats.reduce((a, x) => a + BigInt(x[f] || 0), 0n);
  summary.textContent = t("checks_summary", { passed: formatNumber(checks.filter((c) => c.ok).length), total: formatNumber(checks.length),
    staked: money(sum("stake")), returned: money(sum("returned")) });
}

function paintVerification() {
  const box = $("verify");
  const list = $("verify-checks");
  const v = S.verification;
  list.textContent = "";
  paintChecksSummary(null);
  if (!v) {
    box.textContent = t("no_round_yet");
    return;
  }
  const { round, result, rec } = v;
  $("verify-reveal").textContent = round.reveal_json || "";
  for (const k of ["revealVerdict", "failed", "passed", "signature", "format", "roundId"]) delete box.dataset[k];
  if (!round.reveal_json) {
    box.dataset.verdict = "none";
    box.textContent = t(round.state === "voided" ? "nothing_to_verify" : "no_reveal");
    return;
  }
  if (v.pending) {
    box.dataset.verdict = "pending";
    box.textContent = t("verifying");
    return;
  }
  if (v.error) {
    box.dataset.verdict = "error";
    box.textContent = t("verify_error", { error: v.error.message });
    return;
  }
  box.dataset.signature = signatureState(result);
  box.dataset.format = result.format || "";
  box.dataset.roundId = round.round_id;
  box.dataset.revealVerdict = result.verdict;
  const verified = result.verdict === "verified" && rec && rec.ok;
  box.dataset.verdict = verified ? "verified" : result.verdict === "verified" ? "not_verified" : result.verdict;
  if (rec) { box.dataset.failed = rec.failed.join(","); box.dataset.passed = rec.passed.join(","); }
  const passedWords = rec ? [...new Set(rec.passed.map((f) => fieldWords(f.replace(/^seat\d+\./, ""))))] : [];
  if (verified) {
    box.textContent = t("verified", { fields: passedWords.join(t("list_sep")) })
      + (box.dataset.signature === "passed" ? ` ${t("signature_ok")}` : "");
  } else if (result.verdict !== "verified") {
    // The failed checks, or the rules a malformed reveal breaks, in the player's language.
    const errors = result.verdict === "malformed" ? malformedTexts(result)
      : result.checks.filter((c) => !c.ok).map((c) => `${c.name}: ${checkText(c)}`);
    box.textContent = t(result.verdict === "malformed" ? "malformed" : "not_verified_errors", { errors: errors.join("; ") });
  } else if (!rec) {
    box.textContent = t("not_seen");
  } else {
    const wrong = rec.checks.filter((c) => c.seen && !c.ok).map((c) =>
      t("mismatch", { field: fieldWords(c.field), shown: recordCheckValue(c.field, c.shown), expected: recordCheckValue(c.field, c.expected) }));
    box.textContent = t("not_verified", { wrong: wrong.join("; ") })
      + t("reveal_ok", { rest: passedWords.length ? t("and_so_do", { fields: passedWords.join(t("list_sep")) }) : "" });
  }
  for (const c of result.checks || []) {
    const li = document.createElement("li");
    li.dataset.check = c.name;
    li.textContent = `${c.ok ? "✔" : "✘"} ${checkName(c.name)}: ${checkText(c)}`;
    list.append(li);
  }
  for (const c of rec?.checks || []) {
    const li = document.createElement("li");
    li.dataset.field = c.field;
    li.textContent = c.seen ? `${c.ok ? "✔" : "✘"} ${fieldWords(c.field)}: ${recordCheckValue(c.field, c.shown)} / ${recordCheckValue(c.field, c.expected)}`
      : `– ${fieldWords(c.field)}`;
    list.append(li);
  }
  paintChecksSummary(round, result, rec);
}

// ------------------------------------------------------------------ sign in
function showLogin() {
  $("login").hidden = false;
  $("recovery-note").hidden = true;
  $("game").hidden = true;
  $("logout").hidden = true;
  $("logout-all").hidden = true;
  $("login-name").focus();
}

// Sign-up answers a taken name and a free one alike (so it does not tell which names exist)
// and starts no session: the page signs in next. A taken name fails there like a wrong PIN.
// A wait met at sign-in opens the recovery code field (the way back for a player whose name
// someone else is guessing); a code the platform gives (at sign-up, or a new one after the
// old one was used) is shown once the sign-in succeeds.
async function credentials(path) {
  const name = $("login-name").value.trim(), pin = $("login-pin").value;
  const code = $("login-recovery").value.trim();
  try {
    let issued = null;
    if (path === "/api/register") {
      setText("login-message", () => t("signing_up"));
      issued = (await api(path, { name, pin })).recovery_code || null;
    }
    const res = await api("/api/login", code ? { name, pin, recovery_code: code } : { name, pin });
    setText("login-message", "");
    $("login-recovery").value = "";
    $("recovery-box").open = false;
    if (res.recovery_code) showRecoveryCode(res.recovery_code, res.recovered);
    else if (issued) showRecoveryCode(issued, false);
    await refresh();
    document.activeElement?.blur?.();
  } catch (e) {
    setText("login-message", () => errorText(e, { invalid: "login" }));
    if (e.code === "too_many_attempts" && e.scope !== "recovery") $("recovery-box").open = true;
  }
}
function showRecoveryCode(code, replacesUsed) {
  $("recovery-code").textContent = code;
  setText("recovery-lead", replacesUsed ? () => t("recovery_new") : "");
  $("recovery-note").hidden = false;
}
$("recovery-done").addEventListener("click", () => { $("recovery-note").hidden = true; $("recovery-code").textContent = ""; });

// ------------------------------------------------------------------ keys (the sheets' table)
function isTyping(t) {
  return t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable);
}

document.addEventListener("keydown", (e) => {
  if ($("game").hidden || e.ctrlKey || e.metaKey || e.altKey || isTyping(e.target)) return;
  const onButton = e.target && (e.target.tagName === "BUTTON" || e.target.tagName === "A" || e.target.tagName === "SUMMARY");
  switch (e.key) {
    case "0": repeatBet(); break;
    case "Enter":
      // On a focused button Enter presses that button, as everywhere; elsewhere it is the
      // table's Deal / Stand key.
      if (onButton) return;
      if (deciding()) decide("stand"); else deal();
      break;
    case "+": decide("raise"); break;
    case "1": case "2": case "3": case "4": case "5": case "6": case "7": selectSeat(Number(e.key) - 1); break;
    case "Backspace": removeSeat(); break;
    case "Delete": case ".": case "Decimal": clearBet(); break;
    case "ArrowUp": stepBet(e.shiftKey ? 10 : 1); break;
    case "ArrowDown": stepBet(e.shiftKey ? -10 : -1); break;
    default: return;
  }
  e.preventDefault();
});

// ------------------------------------------------------------------ wiring
$("deal").addEventListener("click", deal);
$("raise").addEventListener("click", () => decide("raise"));
$("stand").addEventListener("click", () => decide("stand"));
$("clear").addEventListener("click", clearBet);
$("repeat").addEventListener("click", repeatBet);
$("add-seat").addEventListener("click", () => selectSeat(S.bets.length));
$("remove-seat").addEventListener("click", removeSeat);
$("new-seed").addEventListener("click", () => { $("client-seed").value = randomSeed(); S.seedCustom = false; render(); });
$("client-seed").addEventListener("input", () => { S.seedCustom = true; render(); });
$("login-form").addEventListener("submit", (e) => { e.preventDefault(); credentials("/api/login"); });
$("logout-all").addEventListener("click", async () => {
  try { await api("/api/logout-all", {}); } catch (e) { if (e.code !== "signed_out") throw e; }
  S.state = null; S.round = null; S.shown = null; showLogin();
});
$("register-button").addEventListener("click", () => {
  if ($("login-form").reportValidity()) credentials("/api/register");
});
$("logout").addEventListener("click", async () => { await api("/api/logout", {}); S.state = null; S.round = null; S.shown = null; showLogin(); });
$("limits-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const maxBet = parseMoney($("limits-max").value);
  if (maxBet === null) {
    setText("limits-message", () => t("enter_amount", { a: "20", b: plainMoney(20 * minorPerMajor() + Math.floor(minorPerMajor() / 2)) }));
    return;
  }
  try {
    const res = await api("/api/limits", { max_bet: maxBet, pin: $("limits-pin").value });
    S.state.limits = res.limits;
    S.bets = S.bets.map((b) => Math.min(b, res.limits.max_bet));
    setText("limits-message", () => t("max_now", { max: money(res.limits.max_bet) }));
    $("limits-message").dataset.result = "ok";
  } catch (err) {
    const l = limits();
    setText("limits-message", () => errorText(err, { invalid: "limits", min: money(l.table_min), max: money(l.table_max) }));
    $("limits-message").dataset.result = err.code || "error";
  }
  $("limits-pin").value = "";
  render();
});

for (const k of ["sound", "voice", "animation"]) {
  const box = $(`opt-${k}`);
  box.checked = opt(k);
  box.addEventListener("change", () => {
    localStorage.setItem(OPT[k], box.checked ? "on" : "off");
    if (k === "animation") {
      setText("options-note", box.checked === ANIMATION_AT_LOAD ? "" : () => t("anim_reload"));
    }
  });
}
if (!canSpeak) {
  $("opt-voice").disabled = true;
  const na = document.createElement("span");
  na.dataset.i18n = "voice_na";
  na.textContent = t("voice_na");
  $("opt-voice").parentElement.append(" ", na);
}

// Paytable, from the engine's rules.
async function start() {
  applyLang(chooseLang(null));
  try {
    await refresh();
  } catch (e) {
    message(() => errorText(e));
    if (!S.state) { setText("login-message", () => errorText(e)); showLogin(); }
  }
  if (S.state?.table) renderPaytable();
}

function renderPaytable() {
  const tb = $("paytable").tBodies[0];
  tb.textContent = "";
  const rows = [[t("three_kind_row"), S.state.table.three_of_a_kind_odds]];
  const odds = S.state.table.spread_odds;
  const groups = [];
  odds.forEach((o, k) => {
    const last = groups[groups.length - 1];
    if (last && last.o === o) last.to = k + 1; else groups.push({ from: k + 1, to: k + 1, o });
  });
  for (const g of groups) rows.push([g.from === g.to ? t("spread_row", { a: g.from }) : t("spread_rows", { a: g.from, b: g.to }), g.o]);
  rows.push([t("consecutive_row"), t("push_word")]);
  for (const [a, b] of rows) {
    const tr = tb.insertRow();
    tr.insertCell().textContent = a;
    tr.insertCell().textContent = typeof b === "string" ? b : t("to_one", { n: b });
  }
}

start();
