// Checkpoints corrupted in random ways (bytes flipped, cut, zeroed, junk appended, a
// file replaced by another) and then restored; and saves killed at a random moment
// (kill -9 of a child that is training) and then restored. Either a valid checkpoint
// loads or an Error says why: never a crash, never a hang.
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const path = require('path');
const { estimator, input } = require('../model');

function corrupt(r, file) {
  const bytes = fs.readFileSync(file);
  const how = r.pick(['flip', 'cut', 'zero', 'append', 'empty', 'swap']);
  if (how === 'flip') for (let i = 0; i < r.int(1, 8); i++) bytes[r.int(0, bytes.length - 1)] ^= 1 << r.int(0, 7);
  if (how === 'zero') bytes.fill(0, r.int(0, bytes.length - 1), r.int(0, bytes.length));
  const out = how === 'cut' ? bytes.subarray(0, r.int(0, bytes.length - 1))
    : how === 'append' ? Buffer.concat([bytes, Buffer.alloc(r.int(1, 4096), r.int(0, 255))])
    : how === 'empty' ? Buffer.alloc(0)
    : how === 'swap' ? Buffer.concat([bytes.subarray(bytes.length >> 1), bytes.subarray(0, bytes.length >> 1)])
    : bytes;
  fs.writeFileSync(file, out);
  return how;
}

module.exports = {
  name: 'checkpoints',
  async run(r, { attempt, scratch }) {
    const dir = fs.mkdtempSync(path.join(scratch, 'ckpt-'));
    try {
      if (r.chance(0.5)) {
        await attempt('train', () => estimator(dir).train(input(1), { steps: r.int(1, 3) }));
        const files = fs.readdirSync(dir).map((f) => path.join(dir, f)).filter((f) => fs.statSync(f).isFile());
        for (let i = 0; i < r.int(1, 2) && files.length; i++) corrupt(r, r.pick(files));
      } else {
        // A child trains and saves every step; it is killed at a random moment.
        const script = `require(${JSON.stringify(path.join(__dirname, '..', 'model.js'))}).estimator(${JSON.stringify(dir)}).train(require(${JSON.stringify(path.join(__dirname, '..', 'model.js'))}).input(2), { steps: 50 })`;
        const child = spawn(process.execPath, ['-e', script], { stdio: 'ignore' });
        const closed = new Promise((resolve) => child.on('close', resolve));
        await new Promise((resolve) => setTimeout(resolve, r.int(300, 2500)));
        child.kill('SIGKILL');
        await closed;
      }
      await attempt('restore and train', () => estimator(dir).train(input(3), { steps: 1 }));
      await attempt('restore and evaluate', () => estimator(dir).evaluate(input(4), { steps: 1 }));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  },
};
