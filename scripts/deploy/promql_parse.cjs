// Reads a JSON array of PromQL expressions on stdin; prints one line per expression, "ok"
// or "error at N", using Prometheus' own lezer grammar (npm @prometheus-io/lezer-promql).
// Exit status 1 if any expression does not parse.
const { parser } = require(process.env.PROMQL_DIR + '/node_modules/@prometheus-io/lezer-promql');
const exprs = JSON.parse(require('fs').readFileSync(0, 'utf8'));
let bad = 0;
for (const e of exprs) {
  let err = null;
  parser.parse(e).iterate({ enter: (n) => { if (n.type.isError && err === null) err = n.from; } });
  if (err !== null) bad++;
  console.log(err === null ? 'ok' : `error at ${err}: ${e.slice(Math.max(0, err - 30), err + 30)}`);
}
process.exit(bad ? 1 : 0);
