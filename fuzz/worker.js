// The fuzz runner's child (fuzz/run.js): runs cases from `firstCase` until the
// deadline. Before each case it prints `CASE {...}` so the runner knows which case a
// crash happened in; an error a case provokes is fine when it is a proper Error (hb-ts
// refused the input and said why), and a finding when it is the engine's own
// (TypeError: Cannot read properties of undefined, ...), which means a check is missing.
'use strict';
const fs = require('fs');
const path = require('path');
const hb = require(path.resolve(__dirname, '..', 'dist', 'index.js'));
const { rng } = require('./generate');

const [seedText, firstText, deadlineText, caseTimeoutText, targetList] = process.argv.slice(2);
const seed = Number(seedText);
const deadline = Number(deadlineText);
const caseTimeout = Number(caseTimeoutText);

const targets = fs
  .readdirSync(path.join(__dirname, 'targets'))
  .filter((f) => f.endsWith('.js'))
  .sort()
  .map((f) => require(path.join(__dirname, 'targets', f)))
  .filter((t) => !targetList || targetList.split(',').includes(t.name));

function say(line) {
  fs.writeSync(1, line + '\n'); // synchronous: printed before a crash can lose it
}

const { ENGINE_ERROR } = require('./engine_error');

function classify(error, where) {
  if (!(error instanceof Error) && !(error && typeof error.message === 'string')) {
    return { kind: 'unexpected', where, thrown: String(error) };
  }
  if (ENGINE_ERROR.test(error.message) || error.code === 'HB_ERR_INTERNAL') {
    return { kind: 'unexpected', where, name: error.name, code: error.code, message: error.message, stack: String(error.stack).split('\n').slice(0, 4).join(' | ') };
  }
  return null;
}

async function main() {
  const root = process.env.HB_FUZZ_SCRATCH || require('os').tmpdir();
  const context = { hb, scratch: fs.mkdtempSync(path.join(root, 'worker-')) };
  try {
    for (let index = Number(firstText); Date.now() < deadline; index++) {
      const r = rng(seed * 1_000_003 + index);
      const target = r.pick(targets);
      say('CASE ' + JSON.stringify({ index, target: target.name, seed }));
      const findings = [];
      // Errors a case provokes on purpose come through here, or escape the case.
      context.attempt = async (what, fn) => {
        try {
          return await fn();
        } catch (error) {
          const finding = classify(error, `${target.name}: ${what}`);
          if (finding) findings.push(finding);
          return undefined;
        }
      };
      let timer;
      const hang = new Promise((resolve) => (timer = setTimeout(() => resolve('hang'), caseTimeout)));
      const outcome = await Promise.race([
        target.run(r, context).then(() => 'done', (error) => {
          const finding = classify(error, `${target.name}: the case`);
          if (finding) findings.push(finding);
          return 'done';
        }),
        hang,
      ]);
      clearTimeout(timer);
      for (const f of findings) say('FINDING ' + JSON.stringify({ ...f, index, seed }));
      if (outcome === 'hang') {
        say('HANG ' + JSON.stringify({ index, target: target.name, seed }));
        process.exit(3);
      }
      if (global.gc && index % 8 === 0) global.gc();
    }
  } finally {
    fs.rmSync(context.scratch, { recursive: true, force: true });
  }
  process.exit(0);
}

main();
