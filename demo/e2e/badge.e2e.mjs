// The table's badge against a dishonest platform, in headless Chromium (docs/FAIRNESS.md
// 4.7, "The table pins the key"): the engine signs receipts (`reddog keygen --signing`), the
// reference platform serves the table, and the browser plays.
//   1. An honest round: the badge is green, the signature passed, and the "key" check names
//      the key this browser pinned, with its fingerprint (the engine's, as `reddog keygen
//      --public` prints it) and where to compare it.
//   2. The player sends a bet of 5.00; the platform (its request rewritten on the way) plays
//      and debits 10.00 and shows 10.00: the badge is red, naming the bet.
//   3. The platform strips `signing_keys` from /api/state and the signature from every
//      answer: the key pinned in step 1 makes the badge red ("came without its signature").
//   4. The platform swaps in its own key (listed under the engine's key id) and signs the
//      reveal with it: red, naming both keys.
//
//   node demo/e2e/badge.e2e.mjs      (after cargo build -p reddog -p reddog-demo --bins)
//
// Env: E2E_TOOLS (dir with node_modules/playwright-core; default .tools/e2e), CHROMIUM.
// Prints "badge: N passed, M failed"; exit status 1 on any failure.
import { spawn, execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { mkdtempSync, createWriteStream } from "node:fs";
import { fileURLToPath } from "node:url";
import os from "node:os";
import path from "node:path";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const TOOLS = process.env.E2E_TOOLS || path.join(ROOT, ".tools/e2e");
const { chromium } = createRequire(path.join(TOOLS, "package.json"))("playwright-core");
const ENGINE = path.join(ROOT, "target/debug/reddog");
const DEMO = path.join(ROOT, "target/debug/reddog-demo");
const WORK = mkdtempSync(path.join(os.tmpdir(), "reddog-badge-"));

let passed = 0, failed = 0;
const procs = [];
async function step(name, fn) {
  try { await fn(); passed++; console.log(`  ok    ${name}`); } catch (e) { failed++; console.log(`  FAIL  ${name}: ${e?.stack || e}`); }
}
function assert(cond, msg) { if (!cond) throw new Error(msg); }
function eq(a, b, msg) { if (a !== b) throw new Error(`${msg}: got ${JSON.stringify(a)}, want ${JSON.stringify(b)}`); }

function start(bin, args, { env = {}, log, re }) {
  const p = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  procs.push(p);
  p.stderr.pipe(createWriteStream(log, { flags: "a" }));
  return new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`${path.basename(bin)}: not ready in 60 s`)), 60000);
    p.stdout.on("data", (d) => {
      out += d;
      const m = re.exec(out);
      if (m) { clearTimeout(timer); resolve({ proc: p, match: m }); }
    });
    p.on("exit", (code) => { clearTimeout(timer); reject(new Error(`${path.basename(bin)} exited ${code}`)); });
  });
}

async function main() {
  const ring = execFileSync(ENGINE, ["keygen", "--id", "k1", "--signing", "s1"]).toString();
  const published = execFileSync(ENGINE, ["keygen", "--public"], { input: ring }).toString().trim().split(" ");
  const fingerprint = createHash("sha256").update(Buffer.from(published[2], "hex")).digest("hex");
  const engine = await start(ENGINE, ["serve", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"],
    { env: { REDDOG_KEY_RING: ring }, log: path.join(WORK, "engine.log"), re: /listening on (\S+)/ });
  const platform = await start(DEMO, ["--engine", `http://${engine.match[1]}`, "--listen", "127.0.0.1:0", "--db",
    path.join(WORK, "demo.sqlite"), "--new-player-balance", "100000"], { log: path.join(WORK, "platform.log"), re: /listening on (http:\S+)/ });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(platform.match[1]);
    await page.fill("#login-name", "dora");
    await page.fill("#login-pin", "2468");
    await page.click("#register-button");
    await page.waitForSelector("#game:not([hidden])");
    // One round of 5.00 on one seat, standing on a spread; the badge's state once it speaks.
    const play = async () => {
      await page.waitForFunction(() => document.body.dataset.busy === "0" && /^[0-9a-f]{64}$/.test(document.querySelector("#f-commitment").textContent), null, { timeout: 30000 });
      if (await page.isDisabled("#deal")) await page.click('button.chip[data-value="500"]');
      const before = await page.$eval("#outcome", (e) => e.dataset.roundId || "");
      await page.click("#deal");
      await page.waitForFunction((b) => document.body.dataset.busy === "0" && (document.querySelector("#outcome").dataset.roundId || "") !== b, before, { timeout: 30000 });
      if (!(await page.isDisabled("#stand"))) {
        await page.click("#stand");
        await page.waitForFunction(() => document.body.dataset.busy === "0" && document.querySelector("#stand").disabled, null, { timeout: 30000 });
      }
      await page.waitForFunction(() => !["pending", "none", ""].includes(document.querySelector("#verify").dataset.verdict || ""), null, { timeout: 30000 });
      return page.evaluate(() => {
        const v = document.querySelector("#verify");
        return { verdict: v.dataset.verdict, signature: v.dataset.signature, failed: v.dataset.failed || "", text: v.textContent,
          checks: [...document.querySelectorAll("#verify-checks li")].map((l) => l.textContent) };
      });
    };
    // A route that rewrites the platform's JSON answers with `change` (each answer's round).
    const rewrite = (change) => async (route) => {
      const response = await route.fetch();
      const json = await response.json();
      change(json);
      await route.fulfill({ response, json });
    };

    await step("an honest signed round: green, signed, the key pinned with its fingerprint and where to compare it", async () => {
      const r = await play();
      eq(r.verdict, "verified", `badge: ${r.text}`);
      eq(r.signature, "passed", "signature check");
      const key = r.checks.find((c) => c.startsWith("✔ key:"));
      assert(key && key.includes(fingerprint) && key.includes("compare the fingerprint"), `key check: ${r.checks.join(" | ")}`);
      const pinned = await page.evaluate(() => JSON.parse(localStorage.getItem("reddog.engine-keys") || "{}"));
      eq(Object.values(pinned)[0]?.fingerprint, fingerprint, "the pinned key is the engine's");
    });

    await step("the player sends 5.00, the platform plays and shows 10.00: the badge is red and names the bet", async () => {
      let rewritten = 0;
      const handler = async (route) => {
        const body = JSON.parse(route.request().postData());
        eq(JSON.stringify(body.bets), "[500]", "the page sent 5.00");
        body.bets = [1000];
        rewritten++;
        await route.continue({ postData: JSON.stringify(body) });
      };
      await page.route("**/api/round/deal", handler);
      try {
        const r = await play();
        eq(rewritten, 1, "the deal request was rewritten");
        eq(r.verdict, "not_verified", `badge: ${r.text}`);
        assert(r.failed.split(",").includes("seat0.bet"), `failed: ${r.failed}`);
        eq(r.signature, "passed", "the engine signed the round it was given: only the player's record catches it");
      } finally {
        await page.unroute("**/api/round/deal", handler);
      }
    });

    await step("signing keys stripped from /api/state and signatures from every answer: red, came without its signature", async () => {
      const strip = rewrite((json) => {
        if (json.table) json.table.signing_keys = [];
        for (const r of [json.round, ...(json.rounds || [])]) if (r) { delete r.signature; delete r.signing_key_id; }
      });
      for (const p of ["**/api/state", "**/api/round/deal", "**/api/round/decide"]) await page.route(p, strip);
      try {
        await page.reload();
        await page.waitForSelector("#game:not([hidden])");
        const keys = await page.evaluate(async () => (await (await fetch("/api/state")).json()).table.signing_keys);
        eq(keys.length, 0, "the platform lists no key now");
        const r = await play();
        eq(r.signature, "failed", `signature check: ${r.checks.join(" | ")}`);
        eq(r.verdict, "not_verified", `badge: ${r.text}`);
        assert(r.text.includes("without its signature"), `the badge says why: ${r.text}`);
      } finally {
        for (const p of ["**/api/state", "**/api/round/deal", "**/api/round/decide"]) await page.unroute(p, strip);
      }
    });

    await step("the platform lists its own key under the engine's key id: red, naming both keys", async () => {
      const other = "fd1724385aa0c75b64fb78cd602fa1d991fdebf76b13c58ed702eac835e9f618";
      const swap = rewrite((json) => { if (json.table) json.table.signing_keys = [{ key_id: "s1", algorithm: "ed25519", public_key_hex: other }]; });
      await page.route("**/api/state", swap);
      try {
        await page.reload();
        await page.waitForSelector("#game:not([hidden])");
        const r = await play();
        eq(r.verdict, "not_verified", `badge: ${r.text}`);
        assert(r.text.includes("instead of the key this browser pinned"), `the badge says why: ${r.text}`);
      } finally {
        await page.unroute("**/api/state", swap);
      }
    });

    await step("the honest platform again: green with the pinned key", async () => {
      await page.reload();
      await page.waitForSelector("#game:not([hidden])");
      const r = await play();
      eq(r.verdict, "verified", `badge: ${r.text}`);
      eq(errors.join("; "), "", "no page error");
    });
  } finally {
    await browser.close();
  }
}

try {
  await main();
} catch (e) {
  failed++;
  console.log(`  FAIL  badge run: ${e?.stack || e}`);
} finally {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill("SIGTERM");
}
console.log(`badge: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
