// Shared by the browser tests in this directory: processes on free loopback ports, a
// headless Chromium (Debian's /usr/bin/chromium driven by npm playwright-core), and the
// pass/fail bookkeeping. Env: E2E_TOOLS (default .tools/e2e), CHROMIUM (default
// /usr/bin/chromium), E2E_ONLY (a regular expression: run only the steps it matches).
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { createWriteStream, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import os from "node:os";
import path from "node:path";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const TOOLS = process.env.E2E_TOOLS || path.join(ROOT, ".tools/e2e");
export const { chromium } = createRequire(path.join(TOOLS, "package.json"))("playwright-core");
export const ENGINE = path.join(ROOT, "target/debug/reddog");
export const DEMO = path.join(ROOT, "target/debug/reddog-demo");

let passed = 0, failed = 0;
const procs = [];
export function ok(name) { passed++; console.log(`  ok    ${name}`); }
export function bad(name, e) { failed++; console.log(`  FAIL  ${name}: ${e?.stack || e}`); }
// E2E_ONLY=REGEX runs only the steps whose names match (to iterate on one).
const ONLY = process.env.E2E_ONLY ? new RegExp(process.env.E2E_ONLY) : null;
export async function step(name, fn) {
  if (ONLY && !ONLY.test(name)) { console.log(`  skip  ${name}`); return; }
  try { await fn(); ok(name); } catch (e) { bad(name, e); }
}
export function assert(cond, msg) { if (!cond) throw new Error(msg); }
export function eq(a, b, msg) { if (a !== b) throw new Error(`${msg}: got ${JSON.stringify(a)}, want ${JSON.stringify(b)}`); }

// Starts a process and waits (bounded) for a stdout line matching `re`.
export function start(bin, args, { env = {}, stderrFile, re, timeoutMs = 30000 }) {
  const p = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  procs.push(p);
  if (stderrFile) p.stderr.pipe(createWriteStream(stderrFile, { flags: "a" })); else p.stderr.resume();
  return new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`${path.basename(bin)}: no ${re} within ${timeoutMs} ms`)), timeoutMs);
    p.stdout.on("data", (d) => {
      out += d;
      const m = re.exec(out);
      if (m) { clearTimeout(timer); resolve({ proc: p, match: m }); }
    });
    p.on("exit", (code) => { clearTimeout(timer); reject(new Error(`${path.basename(bin)} exited ${code} before ready`)); });
  });
}

export function stop(p) {
  return new Promise((resolve) => {
    if (p.exitCode !== null || p.signalCode !== null) return resolve();
    const t = setTimeout(() => { p.kill("SIGKILL"); }, 10000);
    p.once("exit", () => { clearTimeout(t); resolve(); });
    p.kill("SIGTERM");
  });
}

// The engine (a EUR table) and the platform in a fresh work directory; `platformArgs` are
// added to the platform's command line.
export async function servers(platformArgs = []) {
  for (const b of [ENGINE, DEMO]) assert(existsSync(b), `${b} missing: cargo build -p reddog -p reddog-demo --bins`);
  const work = mkdtempSync(path.join(os.tmpdir(), "reddog-e2e-"));
  const table = path.join(work, "table.json");
  writeFileSync(table, JSON.stringify({ currency: "EUR", minor_unit_exponent: 2 }));
  const engine = await start(ENGINE, ["serve", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--table-config", table],
    { stderrFile: path.join(work, "engine.log"), re: /listening on (\S+)/ });
  const platform = await start(DEMO, ["--engine", `http://${engine.match[1]}`, "--listen", "127.0.0.1:0", "--db", path.join(work, "demo.sqlite"),
    "--new-player-balance", "10000000", ...platformArgs], { stderrFile: path.join(work, "platform.log"), re: /listening on (http:\S+)/ });
  return { work, url: platform.match[1], engine: engine.proc, platform: platform.proc };
}

export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
}

// Waits until the round just dealt or decided is waiting for a decision, or settled and
// verified (the page is busy from the press until then).
export async function waitRound(page) {
  await page.waitForFunction(() => document.body.dataset.busy === "0" && document.querySelector("#outcome").dataset.roundId,
    null, { timeout: 30000 });
  return page.evaluate(() => {
    const o = document.querySelector("#outcome"), v = document.querySelector("#verify");
    return { deciding: !document.querySelector("#stand").disabled, hand: o.dataset.hand, outcome: o.dataset.outcome,
      roundId: o.dataset.roundId, verdict: v.dataset.verdict, reveal: document.querySelector("#verify-reveal").textContent,
      verifyText: v.textContent };
  });
}

export async function shownCommitment(page) {
  await page.waitForFunction(() => /^[0-9a-f]{64}$/.test(document.querySelector("#f-commitment").textContent));
}

// The page at rest: its animations finished and its scroll position still for 3 frames.
export async function atRest(page) {
  await page.evaluate(() => Promise.all(document.getAnimations().map((a) => a.finished.catch(() => {}))));
  await page.evaluate(() => new Promise((resolve) => {
    let last = scrollY, still = 0;
    const tick = () => { if (scrollY === last) still++; else { still = 0; last = scrollY; } if (still >= 3) resolve(); else requestAnimationFrame(tick); };
    requestAnimationFrame(tick);
  }));
}

// axe-core in the page: the serious and critical violations (none allowed). The context
// needs `bypassCSP: true` (the page's strict CSP refuses the injected script).
let axeSource = null;
export async function axeSerious(page) {
  axeSource ||= readFileSync(createRequire(path.join(TOOLS, "package.json")).resolve("axe-core/axe.min.js"), "utf8");
  if (!(await page.evaluate(() => "axe" in window))) await page.addScriptTag({ content: axeSource });
  const res = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  return res.violations.filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")}`);
}

export async function finish() {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
  console.log(`${passed} passed, ${failed} failed`);
  return failed;
}
