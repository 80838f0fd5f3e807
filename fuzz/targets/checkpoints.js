// Checkpoints corrupted in random ways (bytes flipped, cut, zeroed, junk appended, a
// file replaced by another) and then restored; and saves killed at a random moment
// (kill -9 of a child that is training) and then restored. Half the trained ones are
// first rewritten as a job's checkpoint (shards and a layout, as W ranks would write
// them), so restoring one re-shards it, and the layout is a file to corrupt too. Either a
// valid checkpoint loads or an Error says why: never a crash, never a hang. And each file
// verified before any read (openCheckpoint) and verified as it is read, whole, in a random
// order (verifyWhileReading, as the Estimator restores) must get the same verdict.
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const path = require('path');
const { estimator, input } = require('../model');
const files = require(path.join(__dirname, '..', '..', 'dist', 'io', 'checkpoint_file.js'));
const { openCheckpoint } = require(path.join(__dirname, '..', '..', 'dist', 'io', 'checkpoint_source.js'));

// A broken promise (the two verifications disagree): reported by the runner as a finding.
function violation(message) {
  const error = new Error(`checkpoint invariant: ${message}`);
  error.code = 'HB_ERR_INTERNAL';
  return error;
}

// Verified up front (a single file also by verifyCheckpoint, which shares no code with the
// reads' hashing), and verified while some tensors are read in a random order: the same
// verdict, and a good file's reads never fail.
async function verifiedBothWays(r, file) {
  const single = file.endsWith('.safetensors') ? files.verifyCheckpoint(file) : Promise.resolve();
  const upFront = await Promise.all([openCheckpoint(file), single]).then(() => undefined, (error) => error);
  let source;
  try {
    source = await openCheckpoint(file, { verifyWhileReading: true });
  } catch (error) {
    if (!upFront) throw violation(`${file} verifies, but its headers do not open: ${error.message}`);
    return;
  }
  const names = [...source.entries.keys()];
  for (let i = names.length - 1; i > 0; i--) {
    const j = r.int(0, i);
    [names[i], names[j]] = [names[j], names[i]];
  }
  const targets = [];
  let readFailure;
  try {
    for (const name of names.slice(0, r.int(0, names.length))) {
      const info = source.entries.get(name);
      const target = files.hostZeros(info.dtype, info.shape);
      targets.push(target);
      await source.read(name, target);
    }
  } catch (error) {
    readFailure = error;
  }
  const whileReading = await source.verified().then(() => undefined, (error) => error);
  for (const t of targets) t.dispose();
  if (!upFront !== !whileReading) {
    throw violation(`${file}: verified up front it is ${upFront ? `refused (${upFront.message})` : 'good'}, verified while read ${whileReading ? `refused (${whileReading.message})` : 'good'}`);
  }
  if (!upFront && readFailure) throw violation(`${file} verifies, but a read of it failed: ${readFailure.message}`);
}

// The latest checkpoint of `dir` written again as the files of a job of W ranks: tables
// (and their slots) by rows (row g in shard g % W), everything else whole in shard 0.
async function asShards(r, dir) {
  const latest = (await files.listCheckpoints(dir)).pop();
  if (!latest) return;
  const saved = await files.loadCheckpoint(latest.path);
  const W = r.int(2, 4);
  const tableOf = (name) => (name.includes('embedding_weights') ? name.slice(0, name.indexOf('embedding_weights') + 17) : undefined);
  const layout = { format: 'hb-ts-sharded/1', globalStep: saved.globalStep, worldSize: W, ownerRule: 'row floormod worldSize', shards: [], tensors: {}, metadata: saved.metadata };
  for (let rank = 0; rank < W; rank++) {
    const mine = [];
    for (const t of saved.tensors.values()) {
      const sharded = tableOf(t.name) !== undefined && t.shape.length >= 1;
      layout.tensors[t.name] = { dtype: t.dtype, shape: t.shape, layout: sharded ? 'sharded' : 'whole' };
      if (!sharded) {
        if (rank === 0) mine.push(t);
        continue;
      }
      const width = t.shape.slice(1).reduce((a, b) => a * b, 1);
      const rows = [];
      for (let g = rank; g < t.shape[0]; g += W) rows.push(...t.data.subarray(g * width, (g + 1) * width));
      mine.push({ name: t.name, dtype: t.dtype, shape: [rows.length / Math.max(width, 1), ...t.shape.slice(1)], data: Float32Array.from(rows) });
    }
    const written = await files.writeCheckpointShard(dir, saved.globalStep, { rank, worldSize: W }, mine, rank === 0 ? saved.metadata : {});
    layout.shards.push({ file: path.basename(written.path), sha256: written.sha256, bytes: written.bytes });
  }
  await files.recordShardedCheckpoint(dir, saved.globalStep, JSON.stringify(layout));
}

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
        if (r.chance(0.5)) await attempt('as shards', () => asShards(r, dir));
        const found = fs.readdirSync(dir).map((f) => path.join(dir, f)).filter((f) => fs.statSync(f).isFile());
        for (let i = 0; i < r.int(1, 2) && found.length; i++) corrupt(r, r.pick(found));
      } else {
        // A child trains and saves every step; it is killed at a random moment.
        const script = `require(${JSON.stringify(path.join(__dirname, '..', 'model.js'))}).estimator(${JSON.stringify(dir)}).train(require(${JSON.stringify(path.join(__dirname, '..', 'model.js'))}).input(2), { steps: 50 })`;
        const child = spawn(process.execPath, ['-e', script], { stdio: 'ignore' });
        const closed = new Promise((resolve) => child.on('close', resolve));
        await new Promise((resolve) => setTimeout(resolve, r.int(300, 2500)));
        child.kill('SIGKILL');
        await closed;
      }
      for (const { path: file } of (await attempt('list', () => files.listCheckpoints(dir))) ?? []) await attempt('verify both ways', () => verifiedBothWays(r, file));
      await attempt('restore and train', () => estimator(dir).train(input(3), { steps: 1 }));
      await attempt('restore and evaluate', () => estimator(dir).evaluate(input(4), { steps: 1 }));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  },
};
