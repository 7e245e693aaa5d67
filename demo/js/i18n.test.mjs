// The page's catalogues (demo/static/i18n.js): every key of the English catalogue exists in
// every other language, of the same kind (text, list or map), with the same `{placeholders}`,
// and no language has a key English lacks (a misspelt key would never be shown).
//   node --test demo/js/
import { test } from "node:test";
import assert from "node:assert/strict";
import { CATALOGUES, LANGS } from "../static/i18n.js";

const placeholders = (text) => [...new Set([...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]))].sort();
const kind = (v) => (Array.isArray(v) ? "list" : typeof v);

test("a catalogue for each of the six languages offered", () => {
  assert.deepEqual(Object.keys(CATALOGUES).sort(), Object.keys(LANGS).sort());
  assert.equal(Object.keys(LANGS).length, 6);
});

for (const lang of Object.keys(CATALOGUES).filter((l) => l !== "en")) {
  test(`${lang}: every English key, of the same kind, with the same placeholders`, () => {
    const en = CATALOGUES.en, other = CATALOGUES[lang];
    const problems = [];
    for (const [key, value] of Object.entries(en)) {
      if (!Object.hasOwn(other, key)) { problems.push(`${key}: missing`); continue; }
      const v = other[key];
      if (kind(v) !== kind(value)) { problems.push(`${key}: a ${kind(v)}, English has a ${kind(value)}`); continue; }
      if (typeof value === "string") {
        if (!v.trim()) problems.push(`${key}: empty`);
        const want = placeholders(value), got = placeholders(v);
        if (want.join() !== got.join()) problems.push(`${key}: placeholders {${got.join("} {")}}, English {${want.join("} {")}}`);
      } else if (Array.isArray(value)) {
        if (v.length !== value.length) problems.push(`${key}: ${v.length} entries, English ${value.length}`);
      } else if (Object.keys(v).sort().join() !== Object.keys(value).sort().join()) {
        problems.push(`${key}: entries ${Object.keys(v).sort()}, English ${Object.keys(value).sort()}`);
      }
    }
    for (const key of Object.keys(other)) if (!Object.hasOwn(en, key)) problems.push(`${key}: not in English`);
    assert.deepEqual(problems, []);
  });
}

// The verifier's checks (demo/static/verify.js) carry their detail as a catalogue key: every
// check of every signed-receipt vector names a key the catalogue has, and in each language
// the text fills every placeholder and is not the English text.
test("every verifier check reads in each language, every placeholder filled", async () => {
  const { readFileSync } = await import("node:fs");
  const { fileURLToPath } = await import("node:url");
  const path = await import("node:path");
  const V = await import("../static/verify.js");
  const { setLang, checkText, hasKey } = await import("../static/i18n.js");
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
  const doc = JSON.parse(readFileSync(path.join(root, "tests/vectors/receipt-v1.json"), "utf8"));
  const checks = [];
  for (const c of doc.cases) checks.push(...(await V.verifyReceipt(c.reveal, c.public_key, c.signature, { table_id: "x" })).checks);
  const keys = new Set(checks.map((c) => c.say?.[0]));
  for (const k of ["vc_cards", "vc_bet", "vc_stake", "vc_totals", "vc_recomputed", "vc_expected", "vc_sig_ok", "vc_sig_bad"]) {
    assert.ok(keys.has(k), `the vectors exercise ${k}`);
  }
  for (const c of checks.filter((c) => c.name !== "commitment")) {
    assert.ok(Array.isArray(c.say) && hasKey(c.say[0]), `${c.name}: ${c.say?.[0]}`);
  }
  try {
    for (const lang of Object.keys(CATALOGUES)) {
      setLang(lang);
      for (const c of checks.filter((c) => c.say)) {
        const text = checkText(c);
        assert.ok(!/\{\w+\}/.test(text), `${lang} ${c.name}: ${text}`);
        if (lang !== "en") assert.notEqual(text, c.detail, `${lang} ${c.name} is still English`);
      }
    }
  } finally {
    setLang("en");
  }
});

// The two signature checks the page adds to the verifier's (demo/static/ui.js verifyRound):
// a round signed with a key the engine does not list, and a round without its signature
// while the engine lists signing keys. Each fails the round and reads in every language.
test("the page's own signature checks fail the round and read in each language", async () => {
  const { readFileSync } = await import("node:fs");
  const { fileURLToPath } = await import("node:url");
  const path = await import("node:path");
  const { verifyRound } = await import("../static/ui.js");
  const { setLang, checkText } = await import("../static/i18n.js");
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
  const doc = JSON.parse(readFileSync(path.join(root, "tests/vectors/receipt-v1.json"), "utf8"));
  const genuine = doc.cases.find((c) => c.name === "settle/genuine");
  const listed = [{ key_id: doc.key_id, public_key_hex: genuine.public_key }];
  const expect = {};
  const cases = [
    ["vc_sig_unknown_key", await verifyRound({ reveal_json: genuine.reveal, signature: genuine.signature, signing_key_id: "elsewhere" }, expect, listed)],
    ["vc_sig_missing", await verifyRound({ reveal_json: genuine.reveal }, expect, listed)],
  ];
  // The same round with its signature under the listed key is verified (the checks above
  // fail on the signature alone).
  const fine = await verifyRound({ reveal_json: genuine.reveal, signature: genuine.signature, signing_key_id: doc.key_id }, expect, listed);
  assert.equal(fine.verdict, "verified");
  try {
    for (const [key, result] of cases) {
      assert.equal(result.verdict, "not_verified", key);
      assert.deepEqual(result.checks.filter((c) => !c.ok).map((c) => c.name), ["signature"], key);
      const sig = result.checks.find((c) => c.name === "signature");
      assert.equal(sig.ok, false, key);
      assert.equal(sig.say[0], key);
      for (const lang of Object.keys(CATALOGUES)) {
        setLang(lang);
        const text = checkText(sig);
        assert.ok(!/\{\w+\}/.test(text), `${lang} ${key}: ${text}`);
        if (key === "vc_sig_unknown_key") assert.ok(text.includes("elsewhere"), `${lang}: names the key: ${text}`);
        if (lang === "en") assert.equal(text, sig.detail, "English reads as the verifier's detail");
        else assert.notEqual(text, sig.detail, `${lang} ${key} is still English`);
      }
    }
  } finally {
    setLang("en");
  }
});

// The rule sheets' words (../shared seeds: the ja, it, fr, ru and de sheets): each button and
// term as its sheet names it, English only where the sheet itself writes English.
const SHEET_TERMS = {
  ja: { deal: "ディール", raise: "レイズ", stand: "スタンド", spread: "スプレッド {n}", pair: "ペア", consecutive: "コンセクティブ", push_word: "プッシュ", list_sep: "、" },
  it: { deal: "Dai Carte", raise: "Rialza", stand: "Ferma", spread: "Spread {n}", k_raise: "rialzo", k_deal: "dai carte / ferma", consecutive: "Mano consecutiva", pair: "Mano di coppia" },
  fr: { spread: "Écart {n}", consecutive: "Consécutives", push_word: "push", pair: "Paire" },
  ru: { raise: "Raise (повысить)", stand: "Stand (остаться)", spread: "Разница {n}", push_word: "ничья" },
  de: { deal: "DEAL", raise: "RAISE (Erhöhen)", stand: "STAND (Halten)", spread: "Wertunterschied {n}", k_deal: "Kartenausgabe / Verbleiben", pair: "Paar Blatt" },
};
// Texts that are the same in that language as in English (a word both languages share, a
// sheet's own English, or placeholders only). Any other text equal to English fails.
const SAME_AS_ENGLISH = {
  ja: ["pin", "limits_range"],
  it: ["pin", "limits_range", "list_sep", "spread", "spread_row", "spread_rows"],
  fr: ["nav_table", "nav_pages", "push_word", "vc_o_push", "seat_push", "nonce", "options", "animation", "vc_absent", "limits_range", "list_sep",
    "col_net", "cn_signature", "cn_nonce", "cn_table_id"],
  ru: ["pin", "limits_range", "list_sep"],
  de: ["name", "pin", "push_word", "vc_o_push", "seat_push", "limits", "animation", "col_hand", "col_status", "limits_range", "list_sep"],
};

for (const [lang, terms] of Object.entries(SHEET_TERMS)) {
  test(`${lang}: the rule sheet's words, and no English left`, () => {
    const cat = CATALOGUES[lang];
    for (const [key, want] of Object.entries(terms)) assert.equal(cat[key], want, `${lang} ${key}`);
    const same = Object.keys(CATALOGUES.en).filter((k) => typeof cat[k] === "string" && cat[k] === CATALOGUES.en[k]);
    assert.deepEqual(same.filter((k) => !SAME_AS_ENGLISH[lang].includes(k)), [], `${lang}: still English`);
    // Words the issue found left in English in German.
    if (lang === "de") for (const k of ["fairness", "commitment", "spread"]) assert.doesNotMatch(cat[k], /Fairness|Commitment|Spread/, k);
  });
}

// Every note the platform writes (demo/src/rounds.rs, in English) reads in each language: the
// forms are taken from the source, their figures filled in.
test("platform notes read in each language", async () => {
  const { readFileSync } = await import("node:fs");
  const { fileURLToPath } = await import("node:url");
  const path = await import("node:path");
  const { setLang, noteText } = await import("../static/i18n.js");
  const src = readFileSync(path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../src/rounds.rs"), "utf8");
  const forms = [...src.matchAll(/(?:format!\(|note = )["'](the (?:engine|platform) (?:refused|settled|restarted)[^"']*|stake mismatch[^"']*)["']/g)].map((m) => m[1]);
  assert.ok(forms.length >= 6, `found ${forms.length} note forms`);
  let n = 0;
  const notes = forms.map((f) => f.replace(/\{[^}]*\}/g, () => (n++ % 2 ? "42" : "7")).replace("{}", "UNAVAILABLE: engine down"));
  try {
    for (const lang of Object.keys(CATALOGUES)) {
      setLang(lang);
      for (const note of notes) {
        const text = noteText(note);
        assert.ok(!/\{\w+\}/.test(text), `${lang}: ${text}`);
        for (const figure of note.match(/\d+/g) || []) assert.ok(text.includes(figure), `${lang} keeps ${figure}: ${text}`);
        if (lang === "en") assert.equal(text, note); else assert.notEqual(text, note, `${lang}: "${note}" is still English`);
      }
    }
  } finally {
    setLang("en");
  }
});

// One term per thing, the sheet's (issue 47): the spread is "Разница" in Russian (never
// "спред"), "Wertunterschied" in German (never "Spread"), "spread" in Italian (never
// "scarto"); the chips are "gettoni" in Italian (never "fiches"); German Clear reads as a
// button ("Wetten entfernen", not the sheet's key-table phrase "Entfernt Wetten"). Checked
// in every catalogue text and in the rules page's article of that language.
const FORBIDDEN = {
  ru: [/спред/i],
  it: [/\bfiches?\b/i, /\bscart[oi]\b/i],
  de: [/\bSpread\b/, /Entfernt Wetten/],
};
test("each sheet's term, and no other, in the catalogues and the rules page", async () => {
  const { readFileSync } = await import("node:fs");
  const { fileURLToPath } = await import("node:url");
  const path = await import("node:path");
  const html = readFileSync(path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../static/rules.html"), "utf8");
  const article = (lang) => new RegExp(`<article lang="${lang}"[^>]*>([\\s\\S]*?)</article>`).exec(html)[1];
  const texts = (v) => (typeof v === "string" ? [v] : Array.isArray(v) ? v : Object.values(v));
  let n = 0;
  for (const [lang, patterns] of Object.entries(FORBIDDEN)) {
    const all = Object.entries(CATALOGUES[lang]).flatMap(([k, v]) => texts(v).map((t) => [k, t])).concat([["rules.html", article(lang)]]);
    for (const [key, text] of all) for (const re of patterns) { n++; assert.doesNotMatch(text, re, `${lang} ${key}`); }
  }
  assert.ok(n > 1000, `${n} texts checked`);
  assert.equal(CATALOGUES.de.clear, "Wetten entfernen");
  assert.equal(CATALOGUES.de.k_clear, "Wetten entfernen");
  assert.match(CATALOGUES.it.chips_label, /^Gettoni\b/);
  assert.match(article("it"), /con i gettoni/);
});

// The rules page's notes on the sheets: the Japanese note quotes its own sheet's line that
// no third card follows a pair (ゲームの遊び方) and resolves it; the German note places the
// same line in its sheet's "Spielerklärung", where it is, not in the "Überblick".
test("the ja and de notes name their sheet's no-third-card line where the sheet has it", async () => {
  const { readFileSync } = await import("node:fs");
  const { fileURLToPath } = await import("node:url");
  const path = await import("node:path");
  const html = readFileSync(path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../static/rules.html"), "utf8");
  const note = (lang) => new RegExp(`<article lang="${lang}"[^>]*>[\\s\\S]*?<p class="note">([\\s\\S]*?)</p>[\\s\\S]*?</article>`).exec(html)[1];
  // The ja sheet (000), section ゲームの遊び方, verbatim.
  assert.ok(note("ja").includes("ディーラーがペアか、続き数字のカードを引いた場合、3枚目のカードは引かれません"), note("ja"));
  assert.ok(note("ja").includes("ゲームの遊び方") && note("ja").includes("ペアの後には必ず3枚目"), note("ja"));
  assert.ok(note("de").includes("Spielerklärung") && !note("de").includes("Überblick"), note("de"));
  assert.ok(note("de").includes("nach einem Paar folgt immer eine dritte Karte"), note("de"));
});

// One meaning per amount (issue 47): a settled seat shows its net — what it won or lost, the
// stake counted — in every language: a push is zero (no sign, never a gain), a win carries a
// plus, a loss a minus; for every stake from 0.01 to 300.00 in steps of 0.01 and each outcome
// the Red Dog paytable allows.
test("a seat's net in each language: a push zero, a win +, a loss −", async () => {
  const { setLang, setCurrency, formatNet, formatMoney } = await import("../static/i18n.js");
  const { seatResult } = await import("../static/ui.js");
  let n = 0;
  try {
    for (const [code, exp] of [["EUR", 2], ["XXX", 2], ["JPY", 0]]) {
      setCurrency(code, exp);
      for (const lang of Object.keys(CATALOGUES)) {
        setLang(lang);
        const C = CATALOGUES[lang];
        const zero = formatNet(0);
        assert.ok(!/[+\-−]/.test(zero) && /0/.test(zero) && !/[1-9]/.test(zero), `${lang} ${code}: zero is ${zero}`);
        for (let stake = 1; stake <= 30000; stake += 7) {
          const push = seatResult({ outcome: "push", stake: String(stake), returned: String(stake) });
          assert.deepEqual(push, [C.seat_push, zero], `${lang} ${code}: a push of ${stake}`);
          for (const odds of [1, 2, 4, 5, 11]) {
            const [word, amount] = seatResult({ outcome: "win", stake: String(stake), returned: String(stake * (odds + 1)) });
            assert.equal(word, C.seat_win);
            assert.ok(amount.includes("+") && amount.replace("+", "") === formatMoney(stake * odds), `${lang} ${code}: win ${amount}`);
          }
          const [word, amount] = seatResult({ outcome: "lose", stake: String(stake), returned: "0" });
          assert.equal(word, C.seat_lose);
          assert.ok(/[-−]/.test(amount) && amount.replace(/[-−]/, "") === formatMoney(stake), `${lang} ${code}: loss ${amount}`);
          n++;
        }
        assert.deepEqual(seatResult({ bet: "500" }, true), [C.seat_voided, zero], `${lang}: a voided seat is refunded, net zero`);
      }
    }
  } finally {
    setLang("en");
    setCurrency("XXX", 2);
  }
  assert.ok(n > 70000, `${n} stakes`);
});

// The checks panel's words: every check name the verifier gives reads in the language, with
// no identifier left; amounts in the checks as money, never minor units.
test("check names and amounts in each language", async () => {
  const { setLang, setCurrency, checkName, checkText } = await import("../static/i18n.js");
  const names = ["commitment", "cards", "seats[0].bet", "seats[6].raised", "seats[2].stake", "seats[3].returned", "totals", "rules_digest",
    "limits", "transcript", "signature", ...["commitment", "client_seed", "nonce", "round_id", "table_id", "decks", "transcript",
      "rules_digest", "bets", "returned", "decisions"].map((k) => `expected ${k}`)];
  try {
    setCurrency("EUR", 2);
    for (const lang of Object.keys(CATALOGUES)) {
      setLang(lang);
      for (const name of names) {
        const text = checkName(name);
        assert.ok(!/seats\[|expected |_/.test(text) && !/\{\w+\}/.test(text), `${lang}: ${name} reads ${text}`);
      }
      const line = checkText({ name: "seats[0].bet", say: ["vc_bet", { bet: 500n, max: 30000n }] });
      assert.ok(line.includes(new Intl.NumberFormat(lang, { style: "currency", currency: "EUR" }).format("5.00")) && !/\b500\b/.test(line), `${lang}: ${line}`);
      const bets = checkText({ name: "expected bets", say: ["vc_expected", { want: "500,600", have: "500,600" }] });
      assert.ok(!/\b500\b/.test(bets), `${lang}: ${bets}`);
    }
  } finally {
    setLang("en");
    setCurrency("XXX", 2);
  }
});

// A sign-in's wait is worded by its scope (issue 47): the name's wait says it is not the
// player's doing and names the recovery code; every wait but the recovery code's own offers
// the code; the seconds as the language writes them.
test("a sign-in's wait in each language, by its scope", async () => {
  const { setLang } = await import("../static/i18n.js");
  const { errorText } = await import("../static/ui.js");
  const keys = { pair: "err_too_many_attempts", address: "err_too_many_address", account: "err_too_many_account",
    device: "err_too_many_device", recovery: "err_too_many_recovery" };
  try {
    for (const lang of Object.keys(CATALOGUES)) {
      setLang(lang);
      const C = CATALOGUES[lang];
      for (const [scope, key] of Object.entries(keys)) {
        const e = Object.assign(new Error("too many wrong sign-ins; try again in 32 s"), { code: "too_many_attempts", scope, retryAfterMs: 31_200 });
        assert.equal(errorText(e), C[key].replace("{secs}", new Intl.NumberFormat(lang).format(32)), `${lang} ${scope}`);
      }
      assert.notEqual(C.err_too_many_account, C.err_too_many_attempts);
      for (const key of ["err_too_many_attempts", "err_too_many_address", "err_too_many_account"]) {
        assert.ok(C[key].includes(C.recovery_code) || C[key].toLowerCase().includes(C.recovery_code.toLowerCase()), `${lang} ${key} names the recovery code (${C.recovery_code})`);
      }
    }
  } finally {
    setLang("en");
  }
});
