// Game recall: the player's recent rounds and each reveal, verified in the browser.
import { checkRecord, recordFromStored } from "./record.js";
import { t, noteText, chooseLang, translatePage, formatDate, formatNumber, formatNet, checkName, checkText, malformedTexts } from "./i18n.js";
import { verifyRound, signatureState, api, money, cardLabel, cardName, describeHand, shownFor, recordFor, setMinorUnitExponent, fieldWords, errorText, recordCheckValue } from "./ui.js";

const $ = (id) => document.getElementById(id);

function status(r) {
  if (r.state === "dealt") return t("h_in_progress");
  if (r.state === "voided") return r.note ? noteText(r.note) : t("h_voided");
  if (r.state !== "settled") return t("h_finishing", { state: r.state });
  return r.recovered ? (r.note ? t("h_recovered_note", { note: noteText(r.note) }) : t("h_recovered")) : t("h_settled");
}

// The page shown: `?limit=N` rounds (default 100), newest first, or those just older than
// the nonce `before` / just newer than the nonce `after` (the "Older" and "Newer" links).
function query() {
  const q = new URLSearchParams(location.search);
  const out = new URLSearchParams();
  const limit = Number(q.get("limit"));
  out.set("limit", Number.isInteger(limit) && limit >= 1 && limit <= 500 ? String(limit) : "100");
  for (const k of ["before", "after"]) if (/^[0-9]{1,20}$/.test(q.get(k) || "")) { out.set(k, q.get(k)); break; }
  return out;
}

function pageLink(id, key, nonce, q) {
  const a = $(id);
  if (nonce === null || nonce === undefined) { a.hidden = true; return; }
  const next = new URLSearchParams({ limit: q.get("limit"), [key]: nonce });
  a.href = `/history?${next}`;
  a.hidden = false;
}

async function main() {
  let data, state;
  const q = query();
  try {
    chooseLang(null);
    state = await api("/api/state");
    setMinorUnitExponent(state.table.minor_unit_exponent, state.table.currency);
    chooseLang(state.player?.name || null);
    translatePage();
    document.title = `Red Dog — ${t("h_title")}`;
    data = await api(`/api/history?${q}`);
  }
  catch (e) {
    translatePage();
    $("summary").textContent = e.status === 401 ? t("h_sign_in") : errorText(e);
    return;
  }
  const tb = $("rounds").tBodies[0];
  let verified = 0, failed = 0;
  for (const [i, r] of data.rounds.entries()) {
    const tr = tb.insertRow();
    tr.dataset.roundId = r.round_id;
    tr.dataset.state = r.state;
    tr.insertCell().textContent = formatDate(r.created_ms);
    tr.insertCell().textContent = `${r.round_id} · ${r.nonce}`;
    const cards = tr.insertCell();
    cards.textContent = (r.cards || []).map(cardLabel).join(" ");
    cards.setAttribute("aria-label", (r.cards || []).map(cardName).join(t("list_sep")));
    tr.insertCell().textContent = describeHand(r);
    const decisionWords = (d) => d === "default" ? t("h_default") : d === "raise" ? t("seat_raised") : d === "stand" ? t("seat_stood")
      : d || (r.hand_class === "non_consecutive" ? "—" : t("h_none_needed"));
    tr.insertCell().textContent = (r.seats || []).length > 1
      ? r.seats.map((x, k) => t("f_seat", { n: k + 1, what: decisionWords(x.decision) })).join(t("list_sep")) : decisionWords(r.decision);
    tr.insertCell().textContent = money(r.bet);
    tr.insertCell().textContent = money(r.stake);
    tr.insertCell().textContent = r.returned === null ? "—" : money(r.returned);
    // The net result (credited − staked): a push is zero, never a gain.
    tr.insertCell().textContent = r.returned === null || r.stake === null ? "—" : formatNet(BigInt(r.returned) - BigInt(r.stake));
    tr.insertCell().textContent = r.balance_after === null ? "—" : money(r.balance_after);
    tr.insertCell().textContent = status(r);
    const fair = tr.insertCell();
    fair.className = "fair";
    if (!r.reveal_json) { fair.textContent = r.state === "settled" ? t("h_no_reveal") : "—"; continue; }
    // Expected values: what this browser was shown before the deal when it has them,
    // otherwise the platform's record of the round.
    const seen = shownFor(r.round_id);
    const expect = { commitment: seen?.commitment ?? r.commitment, nonce: seen?.nonce ?? r.nonce, round_id: r.round_id,
      table_id: seen?.table_id ?? r.table_id, decks: seen?.decks ?? r.decks, client_seed: r.client_seed };
    // A v1 reveal (an engine from before the round-integrity change) has no table id.
    if (!r.reveal_json.includes('"format":')) delete expect.table_id;
    const result = await verifyRound(r, expect, state.table.signing_keys);
    tr.dataset.signature = signatureState(result);
    // The row as shown here, and this browser's own record of the round where it kept one,
    // against the reveal. Without a kept record, the balance change is taken from the round
    // before it in this list (rows are newest first).
    const record = recordFromStored(r, recordFor(r.round_id));
    // The oldest row of a page takes the balance after the round just older than the page.
    const prevAfter = i + 1 < data.rounds.length ? data.rounds[i + 1].balance_after : data.balance_before;
    if (record.balance.after === undefined && prevAfter !== null && prevAfter !== undefined && r.balance_after !== null) {
      record.balance = { before: prevAfter, debited: 0, after: r.balance_after };
    }
    const rec = await checkRecord(result, record);
    const ok = result.verdict === "verified" && rec.ok;
    tr.dataset.verdict = ok ? "verified" : result.verdict === "verified" ? "not_verified" : result.verdict;
    tr.dataset.revealVerdict = result.verdict;
    tr.dataset.failed = rec.failed.join(",");
    if (ok) verified++; else failed++;
    const details = document.createElement("details");
    const summary = document.createElement("summary");
    summary.textContent = ok ? t(seen ? "h_verified_here" : "h_verified")
      : result.verdict === "malformed" ? t("h_malformed")
      : result.verdict !== "verified" ? t("h_not_verified")
      : t("h_differ", { fields: rec.failed.map(fieldWords).join(t("list_sep")) });
    const ul = document.createElement("ul");
    for (const c of result.checks || []) { const li = document.createElement("li"); li.textContent = `${c.ok ? "✔" : "✘"} ${checkName(c.name)}: ${checkText(c)}`; ul.append(li); }
    for (const c of rec.checks) {
      const li = document.createElement("li");
      li.textContent = c.seen ? `${c.ok ? "✔" : "✘"} ${t("h_check", { field: fieldWords(c.field), shown: recordCheckValue(c.field, c.shown), expected: recordCheckValue(c.field, c.expected) })}`
        : `– ${t("h_not_checked", { field: fieldWords(c.field) })}`;
      ul.append(li);
    }
    for (const e of result.verdict === "malformed" ? malformedTexts(result) : []) { const li = document.createElement("li"); li.textContent = `✘ ${e}`; ul.append(li); }
    const pre = document.createElement("pre");
    pre.textContent = r.reveal_json;
    pre.tabIndex = 0;
    pre.setAttribute("role", "region");
    pre.setAttribute("aria-label", t("reveal_label"));
    details.append(summary, ul, pre);
    fair.append(details);
  }
  // Each cell carries its column's name, shown beside it when a phone stacks the row.
  const heads = [...$("rounds").tHead.rows[0].cells].map((c) => c.textContent);
  for (const row of tb.rows) [...row.cells].forEach((cell, k) => { cell.dataset.label = heads[k] || ""; });
  $("summary").textContent = t("h_summary", { rounds: formatNumber(data.rounds.length), balance: money(data.balance), verified: formatNumber(verified) })
    + (failed ? t("h_summary_failed", { failed: formatNumber(failed) }) : "");
  $("summary").dataset.verified = verified;
  $("summary").dataset.failed = failed;
  $("summary").dataset.rounds = data.rounds.length;
  pageLink("newer", "after", data.newer, q);
  pageLink("older", "before", data.older, q);
  $("paging").hidden = $("newer").hidden && $("older").hidden;
}
main();
