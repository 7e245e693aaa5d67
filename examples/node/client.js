#!/usr/bin/env node
// A platform-side Red Dog client in Node.js (@grpc/grpc-js + @grpc/proto-loader, an
// implementation of gRPC independent of the engine's Rust one), safe to copy: plays rounds
// against a running `reddog serve` and checks every reveal.
//
//   cd examples/node && npm ci
//   node client.js --target 127.0.0.1:50051 --rounds 20 [--table ID] [--sandbox] [--verifier ../../verify/verify.py]
//
// The table is chosen from ListTables (`--table`, else the default table; `--sandbox`: a
// sandbox table, cycling through a requested deal of every hand class). Round ids never
// repeat (a random UUID each). Every call is retried with back-off on UNAVAILABLE,
// RESOURCE_EXHAUSTED and DEADLINE_EXCEEDED, waiting at least the RetryInfo delay the server
// sends (every RedDog call is safe to repeat with the same request). The wallet gets one
// transaction per seat per step, each with its own idempotency key (`<round>:<seat>:bet`,
// `:raise`, `:credit`), so a repeated step moves no money twice (docs/INTEGRATION.md).
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
const { execFileSync } = require('child_process');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const protobuf = require('protobufjs');

const REPO = path.resolve(__dirname, '..', '..');

function args() {
  const a = {
    target: '127.0.0.1:50051', rounds: 20, verifier: path.join(REPO, 'verify', 'verify.py'), python: 'python3',
    table: '', sandbox: false,
  };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 1) {
    const key = argv[i].replace(/^--/, '');
    if (!(key in a)) throw new Error(`unknown option ${argv[i]}`);
    if (key === 'sandbox') { a.sandbox = true; continue; }
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

/** The platform's ledger, reduced to the flow: each transaction has an idempotency key; a
 *  repeated key moves nothing again, the same key with another amount is a bug. */
class Wallet {
  constructor() { this.transactions = new Map(); this.balance = 0n; }
  apply(key, amount) {
    if (this.transactions.has(key)) {
      if (this.transactions.get(key) !== amount) throw new Error(`idempotency key ${key} reused for another amount`);
      return false;
    }
    this.transactions.set(key, amount);
    this.balance += amount;
    return true;
  }
  debit(key, amount) { return this.apply(key, -BigInt(amount)); }
  credit(key, amount) { return this.apply(key, BigInt(amount)); }
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

const RETRYABLE = new Set([grpc.status.UNAVAILABLE, grpc.status.RESOURCE_EXHAUSTED, grpc.status.DEADLINE_EXCEEDED]);

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

/** One RedDog call, retried with the same request on a transient failure. */
async function call(client, method, request, attempts = 6) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await callOnce(client, method, request);
    } catch (err) {
      if (!RETRYABLE.has(err.code) || attempt >= attempts) throw err;
      await new Promise((r) => setTimeout(r, retryDelayMs(err, attempt)));
    }
  }
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

async function main() {
  const a = args();
  const def = protoLoader.loadSync(path.join(REPO, 'proto', 'reddog', 'v1', 'reddog.proto'), {
    keepCase: false, longs: String, enums: String, defaults: true, oneofs: true,
  });
  const RedDog = grpc.loadPackageDefinition(def).reddog.v1.RedDog;
  const client = new RedDog(a.target, grpc.credentials.createInsecure());
  const listed = await call(client, 'listTables', {});
  const table = listed.tables.find((t) => (a.table ? t.tableId === a.table
    : a.sandbox ? t.sandbox : t.tableId === listed.defaultTableId && !t.sandbox))
    || (!a.table && !a.sandbox && listed.tables.find((t) => !t.sandbox));
  if (!table || Boolean(table.sandbox) !== a.sandbox) {
    throw new Error(`no ${a.sandbox ? 'sandbox' : 'fair'} table ${a.table} among ${listed.tables.map((t) => t.tableId)}`);
  }
  const rules = await call(client, 'getRules', { tableId: table.tableId });
  const wallet = new Wallet();
  const oddsBySpread = new Map(rules.spreadOdds.map((o) => [o.spread, o.odds]));
  const best = (rules.rtpFigures || []).find((f) => f.strategy === 'best' && f.definition === 'per_initial_bet');
  console.log(`rules: table ${rules.tableId}${rules.sandbox ? ' (sandbox)' : ''}, ${rules.decks} deck(s), limits ${rules.tableLimits.minBet}..${rules.tableLimits.maxBet}, ` +
    `best play "${rules.raiseRule}" RTP ${rules.rtpDecimal}` + (best ? ` (${best.definitionText})` : ''));
  if (rules.engine) console.log(`engine ${rules.engine.version} ${rules.engine.gitCommit} built ${rules.engine.buildDate}`);

  let failures = 0;
  const classes = {};
  for (let i = 0; i < a.rounds; i++) {
    const roundId = `node-${crypto.randomUUID()}`;
    const nonce = String(crypto.randomInt(2 ** 47));
    const deal = a.sandbox ? SANDBOX_DEALS[i % SANDBOX_DEALS.length] : [];
    const bets = ['1000', '2500'];
    const commit = await call(client, 'commitSeed', { roundId, nonce, tableId: rules.tableId });
    // Debit each seat's bet, one transaction per seat, before dealing.
    bets.forEach((bet, seat) => wallet.debit(`${roundId}:${seat}:bet`, bet));
    const start = await call(client, 'startRound', {
      commitmentToken: commit.commitmentToken, clientSeed: `node player ${i}`, nonce, roundId,
      seats: bets.map((bet) => ({ bet })), playerLimits: { minBet: '500', maxBet: '20000' },
      tableId: rules.tableId, sandboxCards: deal,
    });
    const round = start.round;
    classes[round.handClass] = (classes[round.handClass] || 0) + 1;
    let token = start.roundToken;
    if (round.awaitingDecisions) {
      const action = round.spread >= 7 || a.sandbox ? 'ACTION_RAISE' : 'ACTION_STAND';
      // Debit each raise (one transaction per raising seat) before Decide.
      if (action === 'ACTION_RAISE') round.seats.forEach((s) => wallet.debit(`${roundId}:${s.seat}:raise`, s.bet));
      const decided = await call(client, 'decide', {
        roundToken: token, roundId, decisions: round.seats.map((s) => ({ seat: s.seat, action })),
      });
      token = decided.roundToken; // the newest token is the round's state
    }
    const settled = await call(client, 'settle', { roundToken: token, roundId });
    // Credit each seat once; a repeated credit (after a retried Settle) moves nothing.
    settled.results.forEach((r) => wallet.credit(`${roundId}:${r.seat}:credit`, r.returned));
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
    await call(client, 'settle', { roundToken: Buffer.from([1, 2, 3]) });
    failures++;
    console.log('a bad round token was accepted');
  } catch (err) {
    const details = errorDetails(err);
    console.log(`bad token: ${grpc.status[err.code]} "${err.details}" details ${JSON.stringify(details)}`);
    const info = details.find((d) => d.type === 'google.rpc.ErrorInfo');
    if (err.code !== grpc.status.INVALID_ARGUMENT || !info || info.reason !== 'INVALID_TOKEN') {
      failures++;
      console.log('expected INVALID_ARGUMENT with ErrorInfo reason INVALID_TOKEN');
    }
  }
  client.close();
  let staked = 0n;
  let returned = 0n;
  for (const [key, amount] of wallet.transactions) {
    if (key.endsWith(':credit')) returned += amount; else staked -= amount;
  }
  if (wallet.balance !== returned - staked) { failures++; console.log('the wallet balance is not its transactions\' sum'); }
  console.log(`wallet: ${wallet.transactions.size} transactions, debited ${staked}, credited ${returned}`);
  console.log(`hand classes: ${JSON.stringify(classes)}`);
  console.log(`node client: ${a.rounds - Math.min(failures, a.rounds)} passed, ${failures} failed`);
  process.exit(failures ? 1 : 0);
}

main().catch((e) => { console.error(e); process.exit(1); });
