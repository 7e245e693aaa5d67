// The rules help page: the article in the player's language (the same choice as the
// table's), and this table's paytable as the engine states it.
import { LANGS, chooseLang, rememberLang, setLang, lang, t, translatePage } from "./i18n.js";

const $ = (id) => document.getElementById(id);
let table = null;

function show(l) {
  setLang(l);
  translatePage();
  document.title = `Red Dog — ${t("nav_rules")}`;
  $("lang").value = lang();
  for (const a of document.querySelectorAll("article[data-lang]")) a.hidden = a.dataset.lang !== lang();
  if (!table) return;
  const tb = $("paytable").tBodies[0];
  tb.textContent = "";
  const rows = [[t("three_kind_row"), t("to_one", { n: table.three_of_a_kind_odds })]];
  table.spread_odds.forEach((o, k) => rows.push([t("spread_row", { a: k + 1 }), t("to_one", { n: o })]));
  rows.push([t("consecutive_row"), t("push_word")]);
  for (const [a, b] of rows) { const tr = tb.insertRow(); tr.insertCell().textContent = a; tr.insertCell().textContent = b; }
}

for (const [code, label] of Object.entries(LANGS)) {
  const o = document.createElement("option");
  o.value = code; o.textContent = label; o.lang = code;
  $("lang").append(o);
}
let player = null;
$("lang").addEventListener("change", () => { rememberLang($("lang").value, player); show($("lang").value); });
show(chooseLang(null));
try {
  const state = await (await fetch("/api/state", { credentials: "same-origin" })).json();
  table = state.table;
  player = state.player?.name || null;
  show(chooseLang(player));
} catch { /* the articles still show */ }
