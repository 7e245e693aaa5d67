// Load test of the reference platform through its HTTP API, against the real engine.
//
//   node demo/load/load.mjs [--players 200] [--rounds 10] [--bin-dir target/release]
//                           [--think-ms 0] [--seed 1]
//
// Starts the engine (`reddog serve`) and the platform (`reddog-demo`, a fresh SQLite file in
// a temporary directory) from --bin-dir, signs up and signs in --players players, then runs
// them all at once: each plays --rounds rounds, one after another, as the table does —
// new round (POST /api/round), deal 5.00 (POST /api/round/deal), and stand when asked
// (POST /api/round/decide). By default no think time: every player sends its next request
// as soon as the last one is answered (a closed loop), so the figures are the platform's
// capacity and its latency under that many players hammering it, not a model of real players.
//
// --think-ms M (M > 0) models a human instead: each player starts after a uniform delay in
// [0, M) ms (so the players do not all arrive in the same millisecond), and before each of
// its later requests waits a think time drawn from an exponential distribution of mean M ms,
// capped at 4·M. The draws come from a PRNG per player (mulberry32, seeded from --seed
// and the player's index), so a run's think times are reproducible. Latencies are measured
// from sending a request to its parsed answer, think time excluded.
//
// Afterwards the ledger is reconciled to the minor unit: each player's balance as the API
// reports it and as `reddog-demo ledger --json` recomputes it from the entries must equal
// the starting balance minus every stake plus every amount returned, as the rounds' own
// answers state them; the house's balance must be minus the players' net; every ledger
// invariant must hold. Any request error or mismatch exits 1.
//
// Prints rounds per second, p50 / p90 / p99 / max of each request kind (deal, new round,
// stand), measured in this process from sending the request to the parsed answer, and the
// CPU time the platform, the engine and this load generator used during the run, per round
// (from /proc/<pid>/stat; Linux only, omitted elsewhere).

import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir, cpus, loadavg } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import http from "node:http";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const PLAYERS = Number(args.players ?? 200);
const ROUNDS = Number(args.rounds ?? 10);
const BIN = resolve(args["bin-dir"] ?? "target/release");
const THINK_MS = Number(args["think-ms"] ?? 0);
const SEED = Number(args.seed ?? 1);
for (const [k, v] of [["players", PLAYERS], ["rounds", ROUNDS], ["think-ms", THINK_MS], ["seed", SEED]]) {
  if (!Number.isFinite(v) || v < 0) { console.error(`--${k}: a number ≥ 0`); process.exit(2); }
}
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
// node:http with keep-alive (one connection per player in flight, reused for its next
// request) rather than fetch: fetch costs this process several times the CPU per request,
// and the load generator shares the machine's cores with the platform and the engine.
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
const { hostname, port } = new URL(BASE);
function send(method, path, cookie, payload) {
  return new Promise((ok, fail) => {
    const headers = { "content-type": "application/json", ...(cookie ? { cookie } : {}) };
    if (payload !== undefined) headers["content-length"] = Buffer.byteLength(payload);
    const req = http.request({ agent, hostname, port, method, path, headers }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => ok({ status: res.statusCode, headers: res.headers, text: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", fail);
    });
    req.on("error", fail);
    req.end(payload);
  });
}
async function call(method, path, cookie, body) {
  const res = await send(method, path, cookie, body === undefined ? undefined : JSON.stringify(body));
  if (res.status < 200 || res.status > 299) {
    errors++;
    if (firstErrors.length < 5) firstErrors.push(`${method} ${path}: ${res.status} ${res.text}`);
    throw new Error(`${res.status} ${res.text}`);
  }
  return { data: JSON.parse(res.text), cookie: res.headers["set-cookie"]?.[0]?.split(";")[0] };
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

// mulberry32: a small seeded PRNG, uniform in [0, 1).
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));
// A think time: exponential with mean THINK_MS, capped at 4 × THINK_MS.
const thinkTime = (rand) => Math.min(-THINK_MS * Math.log(1 - rand()), 4 * THINK_MS);

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
async function play(name, cookie, k) {
  const rand = prng((SEED * 1_000_003 + k) >>> 0);
  const think = THINK_MS > 0 ? () => sleep(thinkTime(rand)) : async () => {};
  if (THINK_MS > 0) await sleep(rand() * THINK_MS);
  for (let r = 0; r < ROUNDS; r++) {
    if (r > 0) await think();
    const round = (await timed("round", () => call("POST", "/api/round", cookie, {}))).data;
    await think();
    let res = (await timed("deal", () => call("POST", "/api/round/deal", cookie,
      { round_id: round.round_id, client_seed: `load ${name} ${r}`, bet: BET }))).data;
    while (res.round.state === "dealt") {
      const seat = res.round.seats.findIndex((s) => !s.decision);
      await think();
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

// CPU time (user + system, ms) a process has used so far, from /proc/<pid>/stat; null where
// there is no /proc. Clock ticks are taken as 100 a second (Linux's USER_HZ).
function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch { return null; }
}
const cpuNow = () => ({ platform: cpuMs(platform.child.pid), engine: cpuMs(engine.child.pid), load: process.cpuUsage() });

const load0 = loadavg()[0];
const cpu0 = cpuNow();
const t0 = performance.now();
const results = await Promise.allSettled(names.map((n, k) => play(n, cookies[k], k)));
const seconds = (performance.now() - t0) / 1000;
const cpu1 = cpuNow();
const failed = results.filter((r) => r.status === "rejected");

function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : NaN;
}
const f = (x) => x.toFixed(1).padStart(7);
const thinking = THINK_MS > 0 ? `think time ${THINK_MS} ms (exponential, capped at ${4 * THINK_MS} ms, seed ${SEED})` : "no think time";
console.log(`players ${PLAYERS}, rounds each ${ROUNDS}, ${thinking}: ${rounds} rounds in ${seconds.toFixed(2)} s = ${(rounds / seconds).toFixed(0)} rounds/s`);
console.log(`machine: ${cpus().length} cores, load average ${load0.toFixed(2)} before the run`);
if (rounds > 0 && cpu0.platform !== null && cpu1.platform !== null) {
  const per = (a, b) => ((b - a) / rounds).toFixed(2);
  const loadMs = (cpu1.load.user + cpu1.load.system - cpu0.load.user - cpu0.load.system) / 1000;
  const share = (ms) => `${((ms / 1000 / seconds) * 100).toFixed(0)} %`;
  console.log(`CPU per round: platform ${per(cpu0.platform, cpu1.platform)} ms (${share(cpu1.platform - cpu0.platform)} of a core), ` +
    `engine ${per(cpu0.engine, cpu1.engine)} ms (${share(cpu1.engine - cpu0.engine)}), ` +
    `load generator ${(loadMs / rounds).toFixed(2)} ms (${share(loadMs)})`);
}
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
