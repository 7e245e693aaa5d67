// Load test of the reference platform through its HTTP API, against the real engine.
//
//   node demo/load/load.mjs [--players 200] [--rounds 10] [--bin-dir target/release]
//
// Starts the engine (`reddog serve`) and the platform (`reddog-demo`, a fresh SQLite file in
// a temporary directory) from --bin-dir, signs up and signs in --players players, then runs
// them all at once: each plays --rounds rounds, one after another, as the table does —
// new round (POST /api/round), deal 5.00 (POST /api/round/deal), and stand when asked
// (POST /api/round/decide). No think time: every player sends its next request as soon as
// the last one is answered (a closed loop), so the figures are the platform's latency under
// that many players hammering it, not a model of real players.
//
// Afterwards the ledger is reconciled to the minor unit: each player's balance as the API
// reports it and as `reddog-demo ledger --json` recomputes it from the entries must equal
// the starting balance minus every stake plus every amount returned, as the rounds' own
// answers state them; the house's balance must be minus the players' net; every ledger
// invariant must hold. Any request error or mismatch exits 1.
//
// Prints rounds per second and p50 / p90 / p99 / max of each request kind (deal, new round,
// stand), measured in this process from sending the request to the parsed answer.

import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir, cpus, loadavg } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const PLAYERS = Number(args.players ?? 200);
const ROUNDS = Number(args.rounds ?? 10);
const BIN = resolve(args["bin-dir"] ?? "target/release");
const BET = 500;
const START = 100_000;

function start(cmd, argv, prefix, env = {}) {
  const child = spawn(cmd, argv, { stdio: ["ignore", "pipe", process.env.LOAD_LOGS ? "inherit" : "ignore"], env: { ...process.env, ...env } });
  return new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`${cmd} did not start in 60 s`)), 60_000);
    child.on("exit", (code) => fail(new Error(`${cmd} exited with ${code}`)));
    createInterface({ input: child.stdout }).on("line", (line) => {
      if (line.startsWith(prefix)) { clearTimeout(timer); ok({ child, addr: line.slice(prefix.length).trim() }); }
    });
  });
}

const dir = mkdtempSync(join(tmpdir(), "reddog-load-"));
const db = join(dir, "load.sqlite");
const procs = [];
function cleanup() { for (const p of procs) p.kill("SIGKILL"); rmSync(dir, { recursive: true, force: true }); }
process.on("exit", cleanup);

const engine = await start(join(BIN, "reddog"), ["serve", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"], "listening on ");
procs.push(engine.child);
const platform = await start(join(BIN, "reddog-demo"),
  ["--engine", `http://${engine.addr}`, "--listen", "127.0.0.1:0", "--db", db, "--new-player-balance", String(START)],
  "listening on ", { RUST_LOG: "warn" });
procs.push(platform.child);
const BASE = platform.addr;

let errors = 0;
const firstErrors = [];
async function call(method, path, cookie, body) {
  const res = await fetch(BASE + path, {
    method, headers: { "content-type": "application/json", ...(cookie ? { cookie } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) {
    errors++;
    if (firstErrors.length < 5) firstErrors.push(`${method} ${path}: ${res.status} ${text}`);
    throw new Error(`${res.status} ${text}`);
  }
  return { data: JSON.parse(text), cookie: res.headers.get("set-cookie")?.split(";")[0] };
}

// Sign-up and sign-in, 20 at a time (argon2 is meant to be slow).
const names = Array.from({ length: PLAYERS }, (_, k) => `load${k}`);
const cookies = [];
for (let k = 0; k < names.length; k += 20) {
  const batch = names.slice(k, k + 20);
  cookies.push(...await Promise.all(batch.map(async (name) => {
    await call("POST", "/api/register", null, { name, pin: "2468" });
    return (await call("POST", "/api/login", null, { name, pin: "2468" })).cookie;
  })));
}

const times = { deal: [], round: [], stand: [] };
async function timed(kind, fn) {
  const t0 = performance.now();
  const out = await fn();
  times[kind].push(performance.now() - t0);
  return out;
}

const expected = new Map(names.map((n) => [n, START]));
const reported = new Map();
let rounds = 0;
async function play(name, cookie) {
  for (let r = 0; r < ROUNDS; r++) {
    const round = (await timed("round", () => call("POST", "/api/round", cookie, {}))).data;
    let res = (await timed("deal", () => call("POST", "/api/round/deal", cookie,
      { round_id: round.round_id, client_seed: `load ${name} ${r}`, bet: BET }))).data;
    while (res.round.state === "dealt") {
      const seat = res.round.seats.findIndex((s) => !s.decision);
      res = (await timed("stand", () => call("POST", "/api/round/decide", cookie,
        { round_id: round.round_id, action: "stand", seat }))).data;
    }
    const done = res.round;
    if (done.state !== "settled") throw new Error(`round ${done.round_id} ended ${done.state}`);
    expected.set(name, expected.get(name) - done.stake + done.returned);
    reported.set(name, res.balance);
    rounds++;
  }
}

const load0 = loadavg()[0];
const t0 = performance.now();
const results = await Promise.allSettled(names.map((n, k) => play(n, cookies[k])));
const seconds = (performance.now() - t0) / 1000;
const failed = results.filter((r) => r.status === "rejected");

function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : NaN;
}
const f = (x) => x.toFixed(1).padStart(7);
console.log(`players ${PLAYERS}, rounds each ${ROUNDS}: ${rounds} rounds in ${seconds.toFixed(2)} s = ${(rounds / seconds).toFixed(0)} rounds/s`);
console.log(`machine: ${cpus().length} cores, load average ${load0.toFixed(2)} before the run`);
console.log("request          n     p50     p90     p99     max   (ms)");
for (const [k, xs] of Object.entries(times)) {
  console.log(`${k.padEnd(10)} ${String(xs.length).padStart(6)} ${f(pct(xs, 50))} ${f(pct(xs, 90))} ${f(pct(xs, 99))} ${f(Math.max(...xs))}`);
}

// Reconcile: the API's balances, the ledger recomputed from its entries, and the rounds.
const ledger = JSON.parse(execFileSync(join(BIN, "reddog-demo"), ["ledger", "--db", db, "--json"]).toString());
const problems = [...ledger.problems];
const accounts = new Map(ledger.accounts.map((a) => [a.name, a]));
let playersNet = 0;
for (const name of names) {
  const acct = accounts.get(`player:${name}`);
  const want = expected.get(name);
  playersNet += want - START;
  if (!acct || acct.entries_sum !== want) problems.push(`${name}: ledger ${acct?.entries_sum}, rounds say ${want}`);
  if (reported.has(name) && reported.get(name) !== want) problems.push(`${name}: API said ${reported.get(name)}, rounds say ${want}`);
}
const house = accounts.get("house")?.entries_sum;
if (house !== -playersNet) problems.push(`house ${house}, players' net ${playersNet}`);
console.log(`ledger: ${ledger.transactions} transactions; players' net ${playersNet}, house ${house}; ` +
  (problems.length ? `${problems.length} PROBLEMS` : "reconciled to the minor unit"));
for (const p of problems.slice(0, 10)) console.log(`PROBLEM: ${p}`);
if (errors || failed.length) {
  console.log(`${errors} request errors, ${failed.length} players stopped`);
  for (const e of firstErrors) console.log(`  ${e}`);
  for (const r of failed.slice(0, 3)) console.log(`  ${r.reason}`);
}
process.exit(problems.length || errors || failed.length || rounds !== PLAYERS * ROUNDS ? 1 : 0);
