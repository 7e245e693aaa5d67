// The standalone verifier page (verify/web/index.html) in headless Chromium, opened from a
// file:// URL with every network request refused:
//   - every case of tests/vectors/receipt-v1.json and receipt-v2.json typed into the page
//     (reveal, receipts, public key, Settle signature, key id, trusted keys, "accept an
//     untrusted key") gets the vector's verdict — among them the forged reveal under the
//     identity public key with R = identity, S = 0, a key absent from the trusted keys, a
//     StartRound receipt naming the face-down card and a sandbox round's receipts;
//   - the page says "Verified" and "Signed by" only when it checked something: a public key
//     with no signature and no receipt is malformed, and names no signer;
//   - the strict Ed25519 rule in Chromium's WebCrypto (verify-core.js as the page loaded it)
//     gives the 914 C2SP/CCTV and 12 speccheck edge vectors their verdicts.
// Prints "verify-web: N passed, M failed"; exit status 1 on any failure.
//
// Env: E2E_TOOLS (dir with node_modules/playwright-core; default .tools/e2e), CHROMIUM.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const TOOLS = process.env.E2E_TOOLS || path.join(ROOT, ".tools/e2e");
const { chromium } = createRequire(path.join(TOOLS, "package.json"))("playwright-core");
const vectors = (name) => JSON.parse(readFileSync(path.join(ROOT, "tests/vectors", name), "utf8"));

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
  // One case through the page's form: its verdict and the texts it shows.
  const run = async (c) => {
    await page.goto(url);
    await page.fill("#reveal", c.reveal);
    await page.fill("#receipts", (c.receipts || []).join("\n"));
    await page.fill("#public-key", c.public_key || "");
    await page.fill("#signature", c.signature || "");
    await page.fill("#key-id", c.key_id || "");
    await page.fill("#trusted", c.trusted_keys ? JSON.stringify(c.trusted_keys) : "");
    if (c.allow_untrusted) await page.check("#allow-untrusted");
    await page.click("#verify");
    await page.waitForFunction(() => ["verified", "not_verified", "malformed"].includes(document.querySelector("#verdict").dataset.verdict));
    return page.evaluate(() => ({ verdict: document.querySelector("#verdict").dataset.verdict,
      text: document.querySelector("#verdict").textContent, key: document.querySelector("#key").textContent }));
  };
  for (const file of ["receipt-v1.json", "receipt-v2.json"]) {
    const doc = vectors(file);
    for (const c of doc.cases) {
      const got = await run(c);
      // "Signed by" only where every signature and receipt held.
      const signedClaim = got.key.startsWith("Signed by");
      expect(`${file} ${c.name}: ${c.verdict}`, got.verdict === c.verdict && (got.verdict !== "verified" || signedClaim)
        && (got.verdict === "verified" || !got.key.startsWith("Signed by a trusted")), `${got.verdict}: ${got.text} | ${got.key}`);
    }
  }
  const v2 = Object.fromEntries(vectors("receipt-v2.json").cases.map((c) => [c.name, c]));
  const forged = v2["settle/forged-identity-key-r-identity-s-zero"];
  expect("the identity key with R = identity, S = 0 is a forged reveal's only 'signature' here",
    forged.public_key === "01" + "00".repeat(31) && forged.signature === "01" + "00".repeat(63), forged.public_key);
  const nothing = await run({ reveal: v2["settle/genuine"].reveal, public_key: v2["settle/genuine"].public_key,
    trusted_keys: v2["settle/genuine"].trusted_keys });
  expect("a public key with nothing signed: malformed, and no 'Verified' nor 'Signed by'",
    nothing.verdict === "malformed" && !nothing.text.includes("Verified") && !nothing.key.includes("Signed by"),
    `${nothing.text} | ${nothing.key}`);
  const alone = await run({ reveal: v2["settle/genuine"].reveal });
  expect("a reveal alone: verified, saying it checked the reveal only and naming no signer",
    alone.verdict === "verified" && alone.text.includes("checks of the reveal") && alone.key === "", `${alone.text} | ${alone.key}`);

  // The strict rule in this browser's WebCrypto, on the edge vectors.
  const cctv = vectors("ed25519/cctv-ed25519vectors.json");
  const spec = vectors("ed25519/speccheck-cases.json");
  const wrong = await page.evaluate(async ({ cctv, spec }) => {
    const V = globalThis.RedDogVerify;
    const te = new TextEncoder();
    const allowed = new Set(["low_order_component_A", "low_order_component_R"]);
    const out = [];
    for (const v of cctv) {
      const want = (v.flags || []).every((f) => allowed.has(f));
      if ((await V.ed25519Verify(v.key, v.sig, te.encode(v.msg))) !== want) out.push(`cctv ${v.number}`);
    }
    for (const [i, c] of spec.entries()) {
      if ((await V.ed25519Verify(c.pub_key, c.signature, V.hexToBytes(c.message))) !== (i === 3)) out.push(`speccheck ${i}`);
    }
    return out;
  }, { cctv, spec });
  expect(`Chromium: ${cctv.length} CCTV and ${spec.length} speccheck edge vectors get the strict verdict`,
    cctv.length === 914 && spec.length === 12 && wrong.length === 0, wrong.join(", "));
  expect("no request left the machine", requests.every((u) => u.startsWith("file://")), requests.join(", "));
  expect("the verifier script was loaded from a file", requests.some((u) => u.endsWith("/demo/static/verify-core.js")), requests.join(", "));
  expect("no page error", errors.length === 0, errors.join("; "));
} finally {
  await browser.close();
}
console.log(`verify-web: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
