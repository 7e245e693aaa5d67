// The standalone verifier page (verify/web/index.html) in headless Chromium, opened from a
// file:// URL with every network request refused: it verifies the honest reveal of the round
// of tests/vectors/receipt-v1.json with its Settle signature, the Decide receipt and trusted
// keys, and refuses the reveal of the pre-raise token settled after the raise (same receipt),
// a reveal changed by one byte, and a forged reveal with the receipt. Prints
// "verify-web: N passed, M failed"; exit status 1 on any failure.
//
// Env: E2E_TOOLS (dir with node_modules/playwright-core; default .tools/e2e), CHROMIUM.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const TOOLS = process.env.E2E_TOOLS || path.join(ROOT, ".tools/e2e");
const { chromium } = createRequire(path.join(TOOLS, "package.json"))("playwright-core");
const doc = JSON.parse(readFileSync(path.join(ROOT, "tests/vectors/receipt-v1.json"), "utf8"));
const step = (name) => doc.step_cases.find((c) => c.name === name);
const honest = step("step/honest-with-the-decide-receipt");
const older = step("step/settle-older-with-the-decide-receipt");
const forged = step("step/forged-with-the-decide-receipt");
const trusted = JSON.stringify([{ key_id: doc.key_id, algorithm: "ed25519", public_key_hex: doc.public_key }]);
// One byte changed: the seat's amount returned, 4000 → 5000 (the money no longer follows).
const tampered = honest.reveal.replace('"returned":4000', '"returned":5000');

let passed = 0;
let failed = 0;
const expect = (name, ok, detail) => {
  if (ok) passed++; else failed++;
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${ok ? "" : `: ${detail}`}`);
};

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage();
  const requests = [];
  await page.route("**/*", (route) => {
    const url = route.request().url();
    requests.push(url);
    return url.startsWith("file://") ? route.continue() : route.abort();
  });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  const url = pathToFileURL(path.join(ROOT, "verify/web/index.html")).href;
  const run = async (name, { reveal, signature = "", receipts = [], keys = "" }, want, wantText) => {
    await page.goto(url);
    await page.fill("#reveal", reveal);
    await page.fill("#receipts", receipts.join("\n"));
    await page.fill("#public-key", doc.public_key);
    await page.fill("#signature", signature);
    await page.fill("#trusted", keys);
    await page.click("#verify");
    await page.waitForFunction(() => ["verified", "not_verified", "malformed"].includes(document.querySelector("#verdict").dataset.verdict));
    const got = await page.$eval("#verdict", (e) => e.dataset.verdict);
    const text = await page.textContent("body");
    expect(name, got === want && (!wantText || text.includes(wantText)), `verdict ${got}; ${await page.textContent("#verdict")}`);
  };
  await run("a genuine reveal with its signature, the Decide receipt and trusted keys verifies",
    { reveal: honest.reveal, signature: honest.signature, receipts: honest.receipts, keys: trusted }, "verified",
    "Signed by a certified key");
  const fingerprint = createHash("sha256").update(Buffer.from(doc.public_key, "hex")).digest("hex");
  await run("without trusted keys: a key the platform named, and its fingerprint", { reveal: honest.reveal, receipts: honest.receipts },
    "verified", `a key the platform named (not among your trusted keys) — fingerprint SHA-256 ${fingerprint}`);
  await run("the pre-raise token settled after the raise is refused with the Decide receipt",
    { reveal: older.reveal, signature: older.signature, receipts: older.receipts }, "not_verified",
    "does not descend from this signed step");
  await run("a reveal changed in one value is refused", { reveal: tampered, signature: honest.signature }, "not_verified");
  await run("a forged reveal with recomputed hashes is refused with the receipt", { reveal: forged.reveal, receipts: forged.receipts },
    "not_verified");
  expect("no request left the machine", requests.every((u) => u.startsWith("file://")), requests.join(", "));
  expect("the verifier script was loaded from a file", requests.some((u) => u.endsWith("/demo/static/verify-core.js")), requests.join(", "));
  expect("no page error", errors.length === 0, errors.join("; "));
} finally {
  await browser.close();
}
console.log(`verify-web: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
