#!/usr/bin/env node
// A platform-side Red Dog client in Node.js (@grpc/grpc-js + @grpc/proto-loader, an
// implementation of gRPC independent of the engine's Rust one), safe to copy: plays rounds
// against a running `reddog serve` the way docs/INTEGRATION.md says and checks every reveal.
//
//   cd examples/node && npm ci
//   node client.js --target 127.0.0.1:50051 --rounds 20 [--table ID] [--sandbox] [--verifier ../../verify/verify.py]
//   node client.js --state platform.jsonl ...            # the platform's state survives a crash
//   node client.js --state platform.jsonl --sweep [--audit-trail audit.jsonl ...] [--reddog reddog]
//
// The table is chosen from ListTables (`--table`, else the default table; `--sandbox`: a
// sandbox table, cycling through a requested deal of every hand class). Round ids never
// repeat (a random UUID each). A definite refusal (docs/INTEGRATION.md, "Errors") is
// INVALID_ARGUMENT, OUT_OF_RANGE, NOT_FOUND or FAILED_PRECONDITION with the engine's ErrorInfo,
// whose reason is read as the proto's ErrorReason enum (`ErrorReason.DUPLICATE_SEAT`, ...).
// Every other outcome (INTERNAL, UNKNOWN, CANCELLED, UNAVAILABLE, a status without the engine's
// details, no answer) is unknown: the call is retried with the same request, a bounded number
// of times, with back-off, at least the RetryInfo delay the server sends; when the retries run
// out the round is left for the sweeper, never rolled back on a guess. Every settled round's
// wallet (each seat's stake and credit) must equal the engine's Settle answer. The wallet gets one transaction per seat per step,
// each under its idempotency key (`<round>:<seat>:bet`, `:rollback`, `:raise`,
// `:raise-rollback`, `:credit`); each step's wallet transactions and the round's new state
// are one line of the `--state` journal (fsync'd; replayed at start). A round moves
// committed -> bets_debited -> dealt [-> raises_debited -> decided] -> settled, or void when
// StartRound is refused (bets rolled back); a refused Decide rolls its raises back and the
// round is settled as it stands. The sweeper (at every start, or alone with `--sweep`)
// finishes every round of the platform's own not settled or void, and with `--audit-trail`
// cross-checks with `reddog audit-log --open-rounds` that every round the engine's trails
// show open is one the platform voided (a round the platform settled is waited for, up to
// 10 s, until its record reaches the trail).
//
// Per round: CommitSeed -> StartRound -> Decide when the hand asks for decisions (raise when
// the spread is 7 or more, the optimal rule; GetRules names it) -> Settle. Each reveal is
// checked here (SHA-256 of the server seed is the commitment shown before the deal; the
// revealed cards are the ones the round showed; every seat's `returned` follows the paytable
// from GetRules) and by the independent verifier verify/verify.py — which must refuse a
// sandbox round's reveal (it is never a fair round). A refused call's google.rpc details are
// decoded and printed (the `grpc-status-details-bin` trailer). Exit status 0 when every
// round settled and verified, 1 otherwise.
'use strict';

const path = require('path');
const crypto = require('crypto');
const fs = require('fs');
const { execFileSync, spawnSync } = require('child_process');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const protobuf = require('protobufjs');

const REPO = path.resolve(__dirname, '..', '..');

function args() {
  const a = {
    target: '127.0.0.1:50051', rounds: 20, verifier: path.join(REPO, 'verify', 'verify.py'), python: 'python3',
    table: '', sandbox: false, state: '', sweep: false, auditTrail: [], reddog: 'reddog',
  };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 1) {
    const key = argv[i].replace(/^--/, '').replace(/-(.)/g, (_, c) => c.toUpperCase());
    if (!(key in a)) throw new Error(`unknown option ${argv[i]}`);
    if (key === 'sandbox' || key === 'sweep') { a[key] = true; continue; }
    if (key === 'auditTrail') { while (i + 1 < argv.length && !argv[i + 1].startsWith('--')) a.auditTrail.push(argv[++i]); continue; }
    i += 1;
    a[key] = key === 'rounds' ? Number(argv[i]) : argv[i];
  }
  return a;
}

// Requested deals at a sandbox table: spreads 1-11 (third card between: a win), a
// consecutive hand, a pair without a match, three of a kind.
const RANKS = '23456789TJQKA';
const SANDBOX_DEALS = [...Array(11).keys()].map((k) => ['2c', `${RANKS[k + 2]}d`, '3h'])
  .concat([['9d', 'Ts'], ['7h', '7d', 'Kc'], ['7h', '7d', '7s']]);

/** The platform's state: the wallet (each transaction under an idempotency key; a repeated
 *  key moves nothing again, the same key with another amount is a bug) and each round's
 *  progress. Each step is one JSON line of the journal (`--state`), replayed at start. */
class Platform {
  constructor(file) {
    this.file = file; this.wallet = new Map(); this.rounds = new Map();
    if (file && fs.existsSync(file)) {
      for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
        let entry;
        try { entry = JSON.parse(line); } catch (_) { continue; } // a torn last line: that step never happened
        this.apply(entry);
      }
    }
    this.fd = file ? fs.openSync(file, 'a') : null;
  }
  apply({ round, state, moves, fields }) {
    for (const [seat, kind, amount] of moves) {
      const key = `${round}:${seat}:${kind}`;
      const old = this.wallet.get(key);
      if (old !== undefined && old !== String(amount)) throw new Error(`idempotency key ${key} reused for another amount`);
      this.wallet.set(key, String(amount));
    }
    this.rounds.set(round, { ...(this.rounds.get(round) || {}), ...fields, state });
  }
  /** One step: the wallet `moves` [[seat, kind, amount]] (amount < 0: a debit) and the round's new state. */
  step(round, state, moves = [], fields = {}) {
    const entry = { round, state, moves: moves.map(([s, k, v]) => [s, k, String(v)]), fields };
    this.apply(entry);
    if (this.fd !== null) { fs.writeSync(this.fd, `${JSON.stringify(entry)}\n`); fs.fsyncSync(this.fd); }
  }
  unfinished() { return [...this.rounds].filter(([, r]) => !['settled', 'void'].includes(r.state)).map(([id]) => id); }
  /** Settled rounds whose wallet differs from the engine's Settle answer: lines saying where. */
  mismatches() {
    const out = [];
    for (const [id, r] of this.rounds) {
      if (r.state !== 'settled' || !r.results) continue;
      for (const res of r.results) {
        let staked = 0n;
        let credited = 0n;
        for (const [key, amount] of this.wallet) {
          if (!key.startsWith(`${id}:${res.seat}:`) || key.split(':').length !== id.split(':').length + 2) continue;
          if (key.endsWith(':credit')) credited += BigInt(amount); else staked -= BigInt(amount);
        }
        if (staked !== BigInt(res.stake) || credited !== BigInt(res.returned)) {
          out.push(`${id} seat ${res.seat}: the wallet staked ${staked} and credited ${credited}, the engine's Settle says ${res.stake} and ${res.returned}`);
        }
      }
    }
    return out;
  }
  /** Rounds not finished, and void rounds whose money does not net to zero. */
  hanging() {
    const net = new Map();
    for (const [key, amount] of this.wallet) {
      const round = key.split(':').slice(0, -2).join(':');
      net.set(round, (net.get(round) || 0n) + BigInt(amount));
    }
    return this.unfinished().length + [...this.rounds].filter(([id, r]) => r.state === 'void' && (net.get(id) || 0n) !== 0n).length;
  }
}

// google.rpc.Status and the detail types the engine sends, declared inline (field numbers of
// google/rpc/status.proto and error_details.proto).
const rpcTypes = protobuf.Root.fromJSON({
  nested: {
    google: {
      nested: {
        rpc: {
          nested: {
            Status: { fields: { code: { type: 'int32', id: 1 }, message: { type: 'string', id: 2 }, details: { rule: 'repeated', type: 'Any', id: 3 } } },
            Any: { fields: { type_url: { type: 'string', id: 1 }, value: { type: 'bytes', id: 2 } } },
            ErrorInfo: { fields: { reason: { type: 'string', id: 1 }, domain: { type: 'string', id: 2 }, metadata: { keyType: 'string', type: 'string', id: 3 } } },
            BadRequest: { fields: { field_violations: { rule: 'repeated', type: 'FieldViolation', id: 1 } },
              nested: { FieldViolation: { fields: { field: { type: 'string', id: 1 }, description: { type: 'string', id: 2 } } } } },
            PreconditionFailure: { fields: { violations: { rule: 'repeated', type: 'Violation', id: 1 } },
              nested: { Violation: { fields: { type: { type: 'string', id: 1 }, subject: { type: 'string', id: 2 }, description: { type: 'string', id: 3 } } } } },
            RetryInfo: { fields: { retry_delay: { type: 'Duration', id: 1 } } },
            Duration: { fields: { seconds: { type: 'int64', id: 1 }, nanos: { type: 'int32', id: 2 } } },
          },
        },
      },
    },
  },
});

/** The google.rpc details of a refused call, decoded: [{type, ...fields}]. */
function errorDetails(err) {
  const bin = err.metadata && err.metadata.get('grpc-status-details-bin')[0];
  if (!bin) return [];
  const status = rpcTypes.lookupType('google.rpc.Status').decode(bin);
  return status.details.map((any) => {
    const name = any.type_url.split('/').pop();
    try {
      return { type: name, ...rpcTypes.lookupType(name).toObject(rpcTypes.lookupType(name).decode(any.value)) };
    } catch (_) {
      return { type: name };
    }
  });
}

function callOnce(client, method, request) {
  return new Promise((resolve, reject) => {
    client[method](request, { deadline: Date.now() + 10000 }, (err, res) => (err ? reject(err) : resolve(res)));
  });
}

// The codes of a definite refusal, when the engine's ErrorInfo comes with them (INTEGRATION.md).
const DEFINITE = new Set([grpc.status.INVALID_ARGUMENT, grpc.status.OUT_OF_RANGE, grpc.status.NOT_FOUND,
  grpc.status.FAILED_PRECONDITION]);
// The proto's ErrorReason values by name (ErrorReason.INVALID_TOKEN === 8), set in main().
let ErrorReason = {};

/** The ErrorReason of a definite refusal, or undefined when the outcome is unknown: one of the
 *  four codes with the engine's ErrorInfo (domain reddog.v1) whose reason is an ErrorReason. */
function refusalReason(err) {
  if (!DEFINITE.has(err.code)) return undefined;
  const info = errorDetails(err).find((d) => d.type === 'google.rpc.ErrorInfo');
  if (!info || info.domain !== 'reddog.v1' || !(info.reason in ErrorReason)) return undefined;
  const reason = ErrorReason[info.reason];
  return reason === ErrorReason.ERROR_REASON_UNSPECIFIED ? undefined : reason;
}

/** Milliseconds before retry `attempt`: exponential back-off with jitter, at least the
 *  server's RetryInfo delay when it sends one. */
function retryDelayMs(err, attempt) {
  let ms = Math.min(2000, 50 * 2 ** attempt) * (0.5 + Math.random() / 2);
  const info = errorDetails(err).find((d) => d.type === 'google.rpc.RetryInfo');
  if (info && info.retry_delay) {
    ms = Math.max(ms, Number(info.retry_delay.seconds || 0) * 1000 + (info.retry_delay.nanos || 0) / 1e6);
  }
  return ms;
}

/** One RedDog call, retried with the same request on every unknown outcome, `attempts` times
 *  at most. A definite refusal throws the error with `refused` set to its ErrorReason; running
 *  out of retries throws one marked `unreachable` (the outcome is unknown: leave the round to
 *  the sweeper). */
async function call(client, method, request, attempts = 6) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await callOnce(client, method, request);
    } catch (err) {
      const reason = refusalReason(err);
      if (reason !== undefined) { err.refused = reason; throw err; }
      if (attempt >= attempts) { err.unreachable = true; throw err; }
      await new Promise((r) => setTimeout(r, retryDelayMs(err, attempt)));
    }
  }
}

const b64 = (bytes) => Buffer.from(bytes).toString('base64');

/** Drives one stored round to settled or void. `decide(round)` picks the action of a dealt
 *  round awaiting decisions; null (the sweeper: the player is gone) settles it as it stands.
 *  Returns the Settle answer (null for a void round). */
async function advance(client, platform, roundId, decide) {
  for (;;) {
    const r = platform.rounds.get(roundId);
    const bets = r.start.seats.map((s) => BigInt(s.bet));
    if (r.state === 'committed') {
      if (!decide) { platform.step(roundId, 'void'); continue; } // never debited, never dealt
      platform.step(roundId, 'bets_debited', bets.map((b, seat) => [seat, 'bet', -b]));
    } else if (r.state === 'bets_debited') {
      let started;
      try {
        started = await call(client, 'startRound', r.start); // a repeat deals the same round
      } catch (err) {
        if (err.refused === undefined) throw err; // an unknown outcome: never rolled back
        platform.step(roundId, 'void', bets.map((b, seat) => [seat, 'rollback', b]));
        continue;
      }
      platform.step(roundId, 'dealt', [], { token: b64(started.roundToken), round: started.round, awaiting: started.round.awaitingDecisions });
    } else if (r.state === 'dealt' && r.awaiting && decide) {
      const action = decide(r.round);
      const request = { roundToken: r.token, roundId, decisions: r.round.seats.map((s) => ({ seat: s.seat, action })) };
      const raises = action === 'ACTION_RAISE' ? r.round.seats.map((s) => [s.seat, 'raise', -BigInt(s.bet)]) : [];
      platform.step(roundId, 'raises_debited', raises, { decide: request });
    } else if (r.state === 'raises_debited') {
      const raised = r.decide.decisions.filter((d) => d.action === 'ACTION_RAISE').map((d) => [d.seat, 'raise-rollback', bets[d.seat]]);
      let decided;
      try {
        decided = await call(client, 'decide', r.decide); // a repeat answers the same token
      } catch (err) {
        if (err.refused === undefined) throw err; // an unknown outcome: never rolled back
        // The engine decided nothing: roll the raises back, settle as it stands.
        platform.step(roundId, 'dealt', raised, { awaiting: false, refused: err.refused });
        continue;
      }
      if (BigInt(decided.raisedAmount) !== raised.reduce((t, [, , v]) => t + v, 0n)) throw new Error(`${roundId}: raisedAmount is not the raises debited`);
      platform.step(roundId, 'decided', [], { token: b64(decided.roundToken) });
    } else if (r.state === 'dealt' || r.state === 'decided') {
      const settled = await call(client, 'settle', { roundToken: r.token, roundId });
      const results = settled.results.map(({ seat, stake, returned }) => ({ seat, stake, returned }));
      platform.step(roundId, 'settled', settled.results.map((x) => [x.seat, 'credit', BigInt(x.returned)]), { results });
      return settled;
    } else {
      return null;
    }
  }
}

/** Finishes every unfinished round of the platform's own; with `trails`, cross-checks the
 *  engine's open rounds (`reddog audit-log --open-rounds`). Returns the number of problems. */
async function sweep(client, platform, a) {
  const rounds = platform.unfinished();
  for (const id of rounds) {
    const settled = await advance(client, platform, id, null);
    console.log(`sweeper: ${id} ${settled ? `settled, credited ${settled.totalReturned}` : 'void'}`);
  }
  const problems = a.auditTrail.length ? await crossCheck(platform, a) : 0;
  console.log(`sweeper: ${rounds.length} round(s) finished, ${problems} problem(s)`);
  return problems;
}

/** Every round the engine's trails show open must be one the platform voided. A round the
 *  platform has settled may still be on its way to the trail (the engine writes its records in
 *  batches, off the call's path): the check is repeated until the trail shows it settled, for
 *  `waitMs` at most; only then is it a problem. Returns the number of problems. */
async function crossCheck(platform, a, waitMs = 10000) {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const out = spawnSync(a.reddog, ['audit-log', '--open-rounds', '--json', ...a.auditTrail], { encoding: 'utf8' });
    if (out.status !== 0 && out.status !== 1) { console.log(`sweeper: reddog audit-log failed: ${out.stderr}`); return 1; }
    const problems = [];
    const onTheWay = [];
    for (const f of JSON.parse(out.stdout).findings) {
      const mine = platform.rounds.get(f.round_id);
      if (f.kind !== 'open_round') problems.push(`audit finding ${f.kind} on ${f.round_id}: ${f.detail}`);
      else if (mine && mine.state === 'settled') onTheWay.push(f.round_id);
      else if (!mine || mine.state !== 'void') problems.push(`the trail shows ${f.round_id} open; the platform has it ${mine && mine.state}`);
    }
    if (!onTheWay.length || Date.now() >= deadline) {
      for (const id of onTheWay) problems.push(`the trail still shows ${id} open ${waitMs / 1000} s after the platform settled it`);
      for (const p of problems) console.log(`sweeper: ${p}`);
      return problems.length;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** 1 (a failure) when a settled round's wallet differs from the engine's Settle answer. */
function walletMatchesEngine(platform) {
  const mismatches = platform.mismatches();
  for (const line of mismatches) console.log(`FAILED: ${line}`);
  const settled = [...platform.rounds.values()].filter((r) => r.state === 'settled').length;
  console.log(`wallet against the engine's Settle answers: ${settled} settled round(s), ${mismatches.length} seat(s) differ`);
  return mismatches.length ? 1 : 0;
}

/** What the paytable returns for one seat (RULES.md): stake * (odds + 1) on a win, stake on a push, 0 on a loss. */
function expectedReturn(result) {
  const stake = BigInt(result.stake);
  switch (result.outcome) {
    case 'OUTCOME_WIN': return stake * BigInt(result.odds + 1);
    case 'OUTCOME_PUSH': return stake;
    default: return 0n;
  }
}

/** A Decide refused for good (one seat twice: DUPLICATE_SEAT) after its raise was debited:
 *  the raise is rolled back and the round settled as it stands. Returns failures. */
async function refusedDecideRollsBack(client, platform, rules) {
  for (let tries = 0; tries < 20; tries++) {
    const roundId = `node-${crypto.randomUUID()}`;
    const bet = rules.tableLimits.minBet;
    const commit = await call(client, 'commitSeed', { roundId, nonce: '1', tableId: rules.tableId });
    platform.step(roundId, 'committed', [], { start: {
      commitmentToken: b64(commit.commitmentToken), clientSeed: 'refused decide', nonce: '1', roundId,
      seats: [{ bet }], playerLimits: { minBet: bet, maxBet: rules.tableLimits.maxBet }, tableId: rules.tableId,
      sandboxCards: rules.sandbox ? SANDBOX_DEALS[0] : [],
    } });
    platform.step(roundId, 'bets_debited', [[0, 'bet', -BigInt(bet)]]);
    const started = await call(client, 'startRound', platform.rounds.get(roundId).start);
    const token = b64(started.roundToken);
    platform.step(roundId, 'dealt', [], { token, round: started.round, awaiting: started.round.awaitingDecisions });
    if (!started.round.awaitingDecisions) { await advance(client, platform, roundId, null); continue; }
    const twice = { roundToken: token, roundId, decisions: [0, 0].map((seat) => ({ seat, action: 'ACTION_RAISE' })) };
    platform.step(roundId, 'raises_debited', [[0, 'raise', -BigInt(bet)]], { decide: twice });
    const settled = await advance(client, platform, roundId, null);
    const rollback = platform.wallet.get(`${roundId}:0:raise-rollback`);
    const ok = settled && settled.totalStaked === String(bet) && rollback === String(bet)
      && platform.rounds.get(roundId).refused === ErrorReason.DUPLICATE_SEAT;
    console.log(`refused decide: raise ${bet} rolled back, settled staked ${settled && settled.totalStaked}: ${ok ? 'ok' : 'FAILED'}`);
    return ok ? 0 : 1;
  }
  console.log('refused decide: no deal asked for decisions in 20 rounds');
  return 1;
}

async function main() {
  const a = args();
  const def = protoLoader.loadSync(path.join(REPO, 'proto', 'reddog', 'v1', 'reddog.proto'), {
    keepCase: false, longs: String, enums: String, defaults: true, oneofs: true,
  });
  const RedDog = grpc.loadPackageDefinition(def).reddog.v1.RedDog;
  ErrorReason = Object.fromEntries(def['reddog.v1.ErrorReason'].type.value.map((v) => [v.name, v.number]));
  const client = new RedDog(a.target, grpc.credentials.createInsecure());
  const platform = new Platform(a.state);
  let failures = await sweep(client, platform, a); // what a crash left
  if (a.sweep) {
    const hanging = platform.hanging();
    console.log(`hanging stakes: ${hanging}`);
    failures += walletMatchesEngine(platform);
    client.close();
    process.exit(failures + hanging ? 1 : 0);
  }
  const listed = await call(client, 'listTables', {});
  const table = listed.tables.find((t) => (a.table ? t.tableId === a.table
    : a.sandbox ? t.sandbox : t.tableId === listed.defaultTableId && !t.sandbox))
    || (!a.table && !a.sandbox && listed.tables.find((t) => !t.sandbox));
  if (!table || Boolean(table.sandbox) !== a.sandbox) {
    throw new Error(`no ${a.sandbox ? 'sandbox' : 'fair'} table ${a.table} among ${listed.tables.map((t) => t.tableId)}`);
  }
  const rules = await call(client, 'getRules', { tableId: table.tableId });
  const oddsBySpread = new Map(rules.spreadOdds.map((o) => [o.spread, o.odds]));
  const best = (rules.rtpFigures || []).find((f) => f.strategy === 'best' && f.definition === 'per_initial_bet');
  console.log(`rules: table ${rules.tableId}${rules.sandbox ? ' (sandbox)' : ''}, ${rules.decks} deck(s), limits ${rules.tableLimits.minBet}..${rules.tableLimits.maxBet}, ` +
    `best play "${rules.raiseRule}" RTP ${rules.rtpDecimal}` + (best ? ` (${best.definitionText})` : ''));
  if (rules.engine) console.log(`engine ${rules.engine.version} ${rules.engine.gitCommit} built ${rules.engine.buildDate}`);

  const classes = {};
  for (let i = 0; i < a.rounds; i++) {
    const roundId = `node-${crypto.randomUUID()}`;
    const nonce = String(crypto.randomInt(2 ** 47));
    const deal = a.sandbox ? SANDBOX_DEALS[i % SANDBOX_DEALS.length] : [];
    const bets = ['1000', '2500'];
    const commit = await call(client, 'commitSeed', { roundId, nonce, tableId: rules.tableId });
    // Stored before any debit: the request StartRound is sent (and repeated) with.
    platform.step(roundId, 'committed', [], { start: {
      commitmentToken: b64(commit.commitmentToken), clientSeed: `node player ${i}`, nonce, roundId,
      seats: bets.map((bet) => ({ bet })), playerLimits: { minBet: '500', maxBet: '20000' },
      tableId: rules.tableId, sandboxCards: deal,
    } });
    // Debit the bets, deal, debit the raises, decide (raise on spreads of 7 or more), settle, credit.
    const settled = await advance(client, platform, roundId,
      (round) => (round.spread >= 7 || a.sandbox ? 'ACTION_RAISE' : 'ACTION_STAND'));
    if (!settled) { failures++; console.log(`round ${i}: StartRound refused (bets rolled back)`); continue; }
    const round = platform.rounds.get(roundId).round;
    classes[round.handClass] = (classes[round.handClass] || 0) + 1;
    // A retried Settle returns the same settlement; the repeated credit keys move nothing.
    const again = await call(client, 'settle', { roundToken: platform.rounds.get(roundId).token });
    platform.step(roundId, 'settled', again.results.map((x) => [x.seat, 'credit', BigInt(x.returned)]));
    const reveal = JSON.parse(settled.revealJson);
    const problems = [];
    const seedHash = crypto.createHash('sha256').update(Buffer.from(reveal.server_seed, 'hex')).digest('hex');
    if (seedHash !== commit.commitment) problems.push('SHA-256(server_seed) is not the commitment shown before the deal');
    const shown = [round.firstCard.code, round.secondCard.code].concat(settled.round.thirdCard ? [settled.round.thirdCard.code] : []);
    if (JSON.stringify(reveal.cards) !== JSON.stringify(shown)) problems.push(`reveal cards ${reveal.cards} != shown ${shown}`);
    let total = 0n;
    for (const r of settled.results) {
      if (BigInt(r.returned) !== expectedReturn(r)) problems.push(`seat ${r.seat}: returned ${r.returned}, paytable says ${expectedReturn(r)}`);
      if (r.outcome === 'OUTCOME_WIN' && round.handClass === 'HAND_CLASS_NON_CONSECUTIVE' && r.odds !== oddsBySpread.get(round.spread)) {
        problems.push(`seat ${r.seat}: paid ${r.odds} to 1, the paytable says ${oddsBySpread.get(round.spread)}`);
      }
      total += BigInt(r.returned);
    }
    // proto3 JSON and proto-loader's defaults: a zero total is "0", never absent.
    if (BigInt(settled.totalReturned) !== total) problems.push(`totalReturned ${settled.totalReturned} != ${total}`);
    if (a.sandbox) {
      if (deal.join(' ') !== shown.join(' ')) problems.push(`asked for ${deal}, dealt ${shown}`);
      if (!settled.round.sandbox || reveal.format !== 'reddog-sandbox-reveal-v1') problems.push('not marked sandbox');
      try {
        execFileSync(a.python, [a.verifier, '-'], { input: settled.revealJson, stdio: ['pipe', 'ignore', 'pipe'] });
        problems.push('verify.py accepted a sandbox reveal');
      } catch (e) {
        if (e.status !== 2) problems.push(`verify.py exit ${e.status} on a sandbox reveal, expected 2`);
      }
    } else {
      try {
        execFileSync(a.python, [a.verifier, '-'], { input: settled.revealJson, stdio: ['pipe', 'ignore', 'pipe'] });
      } catch (e) {
        problems.push(`verify.py exit ${e.status}: ${String(e.stderr || '').trim()}`);
      }
    }
    const cards = shown.join(' ');
    if (problems.length) {
      failures++;
      console.log(`round ${i}: ${cards} NOT VERIFIED: ${problems.join('; ')}`);
    } else {
      console.log(`round ${i}: ${cards} ${round.handClass.replace('HAND_CLASS_', '').toLowerCase()} ` +
        `staked ${settled.totalStaked} returned ${settled.totalReturned}: ` +
        (a.sandbox ? 'sandbox, refused by the verifier' : 'verified'));
    }
  }

  // A refused call, as a platform sees it: status, message and the decoded details.
  try {
    await call(client, 'settle', { roundToken: Buffer.from([2, 1, 2, 3]) }); // not a token: INVALID_TOKEN
    failures++;
    console.log('a bad round token was accepted');
  } catch (err) {
    const details = errorDetails(err);
    console.log(`bad token: ${grpc.status[err.code]} "${err.details}" details ${JSON.stringify(details)}`);
    const info = details.find((d) => d.type === 'google.rpc.ErrorInfo');
    if (err.refused !== ErrorReason.INVALID_TOKEN || !info || info.reason !== 'INVALID_TOKEN') {
      failures++;
      console.log('expected INVALID_ARGUMENT with ErrorInfo reason INVALID_TOKEN');
    }
  }
  failures += await refusedDecideRollsBack(client, platform, rules);
  client.close();
  let staked = 0n;
  let returned = 0n;
  for (const amount of platform.wallet.values()) {
    if (BigInt(amount) > 0n) returned += BigInt(amount); else staked -= BigInt(amount);
  }
  const hanging = platform.hanging();
  if (hanging) { failures++; console.log(`${hanging} round(s) with stakes hanging`); }
  failures += walletMatchesEngine(platform);
  console.log(`wallet: ${platform.wallet.size} transactions, debited ${staked}, credited ${returned}, hanging stakes ${hanging}`);
  console.log(`hand classes: ${JSON.stringify(classes)}`);
  console.log(`node client: ${a.rounds - Math.min(failures, a.rounds)} passed, ${failures} failed`);
  process.exit(failures ? 1 : 0);
}

main().catch((e) => { console.error(e); process.exit(1); });
