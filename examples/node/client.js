#!/usr/bin/env node
// A platform-side Red Dog client in Node.js (@grpc/grpc-js + @grpc/proto-loader, an
// implementation of gRPC independent of the engine's Rust one): plays rounds against a
// running `reddog serve` and checks every reveal.
//
//   cd examples/node && npm ci   # the versions in package-lock.json
//   node client.js --target 127.0.0.1:50051 --rounds 20 [--verifier ../../verify/verify.py]
//
// Per round: CommitSeed -> StartRound (two seats) -> Decide when the hand asks for decisions
// (raise when the spread is 7 or more, the optimal rule; GetRules names it) -> Settle. Each
// reveal is checked here (SHA-256 of the server seed is the commitment shown before the
// deal; the revealed cards are the ones the round showed; every seat's `returned` follows
// the paytable from GetRules) and by the independent verifier verify/verify.py. A refused
// call's google.rpc details are decoded and printed (the `grpc-status-details-bin` trailer).
// Exit status 0 when every round settled and verified, 1 otherwise.
'use strict';

const path = require('path');
const crypto = require('crypto');
const { execFileSync } = require('child_process');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const protobuf = require('protobufjs');

const REPO = path.resolve(__dirname, '..', '..');

function args() {
  const a = { target: '127.0.0.1:50051', rounds: 20, verifier: path.join(REPO, 'verify', 'verify.py'), python: 'python3' };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    if (!(key in a)) throw new Error(`unknown option ${argv[i]}`);
    a[key] = key === 'rounds' ? Number(argv[i + 1]) : argv[i + 1];
  }
  return a;
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

function call(client, method, request) {
  return new Promise((resolve, reject) => {
    client[method](request, { deadline: Date.now() + 10000 }, (err, res) => (err ? reject(err) : resolve(res)));
  });
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
  const rules = await call(client, 'getRules', {});
  const oddsBySpread = new Map(rules.spreadOdds.map((o) => [o.spread, o.odds]));
  const best = (rules.rtpFigures || []).find((f) => f.strategy === 'best' && f.definition === 'per_initial_bet');
  console.log(`rules: ${rules.decks} deck(s), limits ${rules.tableLimits.minBet}..${rules.tableLimits.maxBet}, ` +
    `best play "${rules.raiseRule}" RTP ${rules.rtpDecimal}` + (best ? ` (${best.definitionText})` : ''));
  if (rules.engine) console.log(`engine ${rules.engine.version} ${rules.engine.gitCommit} built ${rules.engine.buildDate}`);

  let failures = 0;
  const classes = {};
  for (let i = 0; i < a.rounds; i++) {
    const roundId = `node-${process.pid}-${i}`;
    const commit = await call(client, 'commitSeed', { roundId, nonce: String(i), tableId: '' });
    const start = await call(client, 'startRound', {
      commitmentToken: commit.commitmentToken, clientSeed: `node player ${i}`, nonce: String(i), roundId,
      seats: [{ bet: '1000' }, { bet: '2500' }], playerLimits: { minBet: '500', maxBet: '20000' },
    });
    const round = start.round;
    classes[round.handClass] = (classes[round.handClass] || 0) + 1;
    let token = start.roundToken;
    if (round.awaitingDecisions) {
      const action = round.spread >= 7 ? 'ACTION_RAISE' : 'ACTION_STAND';
      const decided = await call(client, 'decide', {
        roundToken: token, roundId, decisions: round.seats.map((s) => ({ seat: s.seat, action })),
      });
      token = decided.roundToken;
    }
    const settled = await call(client, 'settle', { roundToken: token, roundId });
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
    try {
      execFileSync(a.python, [a.verifier, '-'], { input: settled.revealJson, stdio: ['pipe', 'ignore', 'pipe'] });
    } catch (e) {
      problems.push(`verify.py exit ${e.status}: ${String(e.stderr || '').trim()}`);
    }
    const cards = shown.join(' ');
    if (problems.length) {
      failures++;
      console.log(`round ${i}: ${cards} NOT VERIFIED: ${problems.join('; ')}`);
    } else {
      console.log(`round ${i}: ${cards} ${round.handClass.replace('HAND_CLASS_', '').toLowerCase()} ` +
        `staked ${settled.totalStaked} returned ${settled.totalReturned}: verified`);
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
  console.log(`hand classes: ${JSON.stringify(classes)}`);
  console.log(`node client: ${a.rounds - Math.min(failures, a.rounds)} passed, ${failures} failed`);
  process.exit(failures ? 1 : 0);
}

main().catch((e) => { console.error(e); process.exit(1); });
