// Game recall: the player's recent rounds and each reveal, verified in the browser.
import { verifyReveal } from "./verify.js";
import { api, money, cardLabel, cardName, describeHand, shownFor, setMinorUnitExponent } from "./ui.js";

const $ = (id) => document.getElementById(id);

function status(r) {
  if (r.state === "dealt") return "In progress: waiting for your decision (resume it on the table)";
  if (r.state === "voided") return r.note || "Voided; bet refunded";
  if (r.state !== "settled") return `Being finished by the platform (${r.state})`;
  return r.recovered ? `Settled after a platform restart${r.note ? `: ${r.note}` : ""}` : "Settled";
}

async function main() {
  let data;
  try {
    setMinorUnitExponent((await api("/api/state")).table.minor_unit_exponent);
    data = await api("/api/history?limit=100");
  }
  catch (e) { $("summary").textContent = e.status === 401 ? "Sign in on the table first." : e.message; return; }
  const tb = $("rounds").tBodies[0];
  let verified = 0, failed = 0;
  for (const r of data.rounds) {
    const tr = tb.insertRow();
    tr.dataset.roundId = r.round_id;
    tr.dataset.state = r.state;
    tr.insertCell().textContent = new Date(r.created_ms).toLocaleString();
    tr.insertCell().textContent = `${r.round_id} · ${r.nonce}`;
    const cards = tr.insertCell();
    cards.textContent = (r.cards || []).map(cardLabel).join(" ");
    cards.setAttribute("aria-label", (r.cards || []).map(cardName).join(", "));
    tr.insertCell().textContent = describeHand(r);
    tr.insertCell().textContent = r.decision === "default" ? "stood (no decision)" : r.decision || (r.hand_class === "non_consecutive" ? "—" : "none needed");
    tr.insertCell().textContent = money(r.bet);
    tr.insertCell().textContent = money(r.stake);
    tr.insertCell().textContent = r.returned === null ? "—" : money(r.returned);
    tr.insertCell().textContent = r.balance_after === null ? "—" : money(r.balance_after);
    tr.insertCell().textContent = status(r);
    const fair = tr.insertCell();
    fair.className = "fair";
    if (!r.reveal_json) { fair.textContent = r.state === "settled" ? "no reveal" : "—"; continue; }
    // Expected values: what this browser was shown before the deal when it has them,
    // otherwise the platform's record of the round.
    const seen = shownFor(r.round_id);
    const expect = { commitment: seen?.commitment ?? r.commitment, nonce: seen?.nonce ?? r.nonce, round_id: r.round_id,
      table_id: seen?.table_id ?? r.table_id, decks: seen?.decks ?? r.decks, client_seed: r.client_seed };
    // A v1 reveal (an engine from before the round-integrity change) has no table id.
    if (!r.reveal_json.includes('"format":')) delete expect.table_id;
    const result = await verifyReveal(r.reveal_json, expect);
    tr.dataset.verdict = result.verdict;
    if (result.verdict === "verified") verified++; else failed++;
    const details = document.createElement("details");
    const summary = document.createElement("summary");
    summary.textContent = result.verdict === "verified" ? `✔ verified${seen ? " (as shown here)" : ""}` : `✘ ${result.verdict.replace("_", " ")}`;
    const ul = document.createElement("ul");
    for (const c of result.checks || []) { const li = document.createElement("li"); li.textContent = `${c.ok ? "✔" : "✘"} ${c.name}: ${c.detail}`; ul.append(li); }
    for (const e of result.verdict === "malformed" ? result.errors : []) { const li = document.createElement("li"); li.textContent = `✘ ${e}`; ul.append(li); }
    const pre = document.createElement("pre");
    pre.textContent = r.reveal_json;
    details.append(summary, ul, pre);
    fair.append(details);
  }
  $("summary").textContent = `${data.rounds.length} rounds · balance ${money(data.balance)} · ${verified} reveals verified in this browser${failed ? ` · ${failed} NOT verified` : ""}`;
  $("summary").dataset.verified = verified;
  $("summary").dataset.failed = failed;
  $("summary").dataset.rounds = data.rounds.length;
}
main();
