// The table's badge and the engine's key (docs/FAIRNESS.md 4.7, "The table pins the key").
// A page that takes the engine's public key from the platform with every round proves only
// that the platform is consistent with itself: a platform that drops the signatures and the
// keys, or swaps in its own key, would still get "verified". So this browser keeps the first
// key it sees for each table (`localStorage`, per platform origin) and from then on:
//   - a round that arrives without a signature fails the "signature" check;
//   - a round signed by another key id, or a key id the platform now lists with another
//     public key, fails it too, naming both keys;
//   - a signature is checked with the PINNED key only, strictly (verify-core.js), over the
//     key id the engine put inside the signed message;
//   - a verified round gets a "key" check: the key's id and fingerprint (SHA-256 of the 32
//     bytes), and where to compare it (the operator's or certification report's published
//     fingerprint, `reddog keygen --public`).
// A key rotated by the operator turns the badge red too, with the same reason: the player
// compares the new fingerprint and clears the pin (forgetPinnedKey) only if it matches.
import { verifyReveal, verifyReceipt, keyFingerprint } from "./verify.js";

const STORE = "reddog.engine-keys";
const memory = new Map();
const storage = {
  get() {
    try { return JSON.parse(globalThis.localStorage?.getItem(STORE) || "null") || Object.fromEntries(memory); } catch { return Object.fromEntries(memory); }
  },
  set(all) {
    for (const [k, v] of Object.entries(all)) memory.set(k, v);
    try { globalThis.localStorage?.setItem(STORE, JSON.stringify(all)); } catch { /* storage full or absent: kept in memory */ }
  },
};

// The key this browser pinned for a table: { key_id, public_key_hex, fingerprint, pinned_ms } or null.
export function pinnedKey(tableId) {
  return storage.get()[tableId || "default"] || null;
}

// Pins `key` ({ key_id, public_key_hex }) for a table unless one is pinned already.
async function pin(tableId, key) {
  const all = storage.get();
  const id = tableId || "default";
  if (all[id]) return all[id];
  all[id] = { key_id: key.key_id, public_key_hex: key.public_key_hex.toLowerCase(),
    fingerprint: await keyFingerprint(key.public_key_hex), pinned_ms: Date.now() };
  storage.set(all);
  return all[id];
}

// Forgets a table's pinned key (after the player compared a rotated key's fingerprint).
export function forgetPinnedKey(tableId) {
  const all = storage.get();
  delete all[tableId || "default"];
  memory.delete(tableId || "default");
  try { globalThis.localStorage?.setItem(STORE, JSON.stringify(all)); } catch { /* absent */ }
}

function fail(out, detail, say) {
  out.checks.push({ name: "signature", ok: false, detail, say });
  out.errors.push(`signature: ${detail}`);
  out.verdict = "not_verified";
  return out;
}

const short = (k) => `"${k.key_id}" (fingerprint SHA-256 ${k.fingerprint})`;

// Verifies a settled round against `expect` and the table's pinned key; `signingKeys` are the
// keys the platform lists now (GetRules `signing_keys` via /api/state), used only to pin the
// first one seen. The answer is verifyReveal's, with the "signature" and "key" checks.
export async function verifyPinned(round, expect, signingKeys = [], tableId = round.table_id) {
  const listed = signingKeys || [];
  let pinned = pinnedKey(tableId);
  const signedBy = listed.find((k) => k.key_id === round.signing_key_id);
  // The first key seen at this table: one listed by the platform with a signature under it,
  // or the first listed.
  if (!pinned && listed.length && !round.signature) pinned = await pin(tableId, listed[0]);
  if (!pinned) {
    if (!round.signature) return verifyReveal(round.reveal_json, expect);
    if (!signedBy) {
      return fail(await verifyReveal(round.reveal_json, expect),
        `signed with key "${round.signing_key_id}", which the engine does not list`, ["vc_sig_unknown_key", { key: round.signing_key_id }]);
    }
  }
  if (pinned && !round.signature) {
    const out = await verifyReveal(round.reveal_json, expect);
    // A version-1 reveal (an engine from before receipts) carries no transcript to sign.
    if (out.verdict === "malformed" || out.format === "reddog-reveal-v1") return out;
    out.pinned = pinned;
    return fail(out, "the engine signs every settlement, but this round came without its signature", ["vc_sig_missing"]);
  }
  if (pinned) {
    const relisted = listed.find((k) => k.key_id === pinned.key_id);
    if (round.signing_key_id !== pinned.key_id || (relisted && relisted.public_key_hex.toLowerCase() !== pinned.public_key_hex)) {
      const theirs = signedBy ? ` (SHA-256 ${(await keyFingerprint(signedBy.public_key_hex)).slice(0, 16)}…)` : "";
      const named = `${round.signing_key_id}${theirs}" instead of the key this browser pinned, "${pinned.key_id} (SHA-256 ${pinned.fingerprint.slice(0, 16)}…)`;
      const out = await verifyReveal(round.reveal_json, expect);
      out.pinned = pinned;
      return fail(out, `signed with key "${named}", which the engine does not list`, ["vc_sig_unknown_key", { key: named }]);
    }
  }
  const key = pinned || { key_id: signedBy.key_id, public_key_hex: signedBy.public_key_hex.toLowerCase() };
  const out = await verifyReceipt(round.reveal_json, key.public_key_hex, round.signature, expect, round.signing_key_id);
  const sig = out.checks.find((c) => c.name === "signature");
  if (sig && sig.ok) {
    const kept = pinned || await pin(tableId, key);
    out.checks.push({ name: "key", ok: true, detail: `signed by the key this browser pinned for this table, ${short(kept)}; `
      + "compare the fingerprint with the one the operator or the certification report publishes (reddog keygen --public)" });
    out.key = kept;
  }
  return out;
}
