// hb.distribute's collectives between 2 or 3 real processes (`hb-ts launch` on
// loopback), over shared memory or Gloo's TCP: calls drawn alike on every rank, with one
// rank now and then changing its own arguments or leaving early (fuzz/jobs/
// collectives_rank.js). Every rank must finish with right values or Errors that say why:
// a rank that dies, hangs past its bound, or prints something unexpected is a finding.
'use strict';
const path = require('path');
const { spawn } = require('child_process');

const root = path.resolve(__dirname, '..', '..');

function internal(message) {
  return Object.assign(new Error(message), { code: 'HB_ERR_INTERNAL' });
}

module.exports = {
  name: 'collectives_job',
  async run(r, { hb }) {
    if (!hb.backend().gloo.available) return;
    const W = r.pick([2, 2, 3]);
    const transport = r.chance(0.75) ? 'shm' : 'tcp';
    const args = [path.join(root, 'bin', 'hb-ts.js'), 'launch', '--nproc-per-node', String(W), path.join(root, 'fuzz', 'jobs', 'collectives_rank.js'), String(r.int(1, 2 ** 30))];
    const child = spawn(process.execPath, args, {
      env: { ...process.env, HB_DEVICE: 'cpu', HB_NUM_THREADS: '1', HB_COMM_TIMEOUT_MS: '2000', HB_COMM_SHM: transport === 'tcp' ? '0' : '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group: a kill takes the workers with the launcher
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b) => (stdout += b));
    child.stderr.on('data', (b) => (stderr += b));
    // Each call is bounded by the 2 s timeout and a job makes at most 10: 15 s is a hang.
    const killer = setTimeout(() => process.kill(-child.pid, 'SIGKILL'), 15_000);
    const [code, signal] = await new Promise((resolve) => child.on('close', (c, s) => resolve([c, s])));
    clearTimeout(killer);
    const results = stdout.split('\n').filter((l) => l.includes('RESULT ')).map((l) => JSON.parse(l.slice(l.indexOf('RESULT ') + 7)));
    const unexpected = results.flatMap((x) => x.unexpected || []);
    if (code !== 0 || signal || results.length !== W || unexpected.length) {
      throw internal(`collectives_job (${W} ranks, ${transport}, ${args[args.length - 1]}): exit ${code ?? signal}, ${results.length} results; ${unexpected.slice(0, 3).join('; ')} ${stderr.slice(-600)}`);
    }
    for (const x of results) {
      if (x.transport !== transport) throw internal(`collectives_job: asked for ${transport}, rank ${x.rank} used ${x.transport}`);
    }
  },
};
