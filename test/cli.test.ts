// The hb-ts command as a user runs it: info never fails, the version, and a missing
// addon reported with its fix instead of a stack trace.
import { spawnSync } from 'child_process';
import * as path from 'path';

const cli = path.resolve(__dirname, '..', 'bin', 'hb-ts.js');
const run = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env } });

describe('npx hb-ts', () => {
  test('info prints the backend report', () => {
    const r = run(['info']);
    expect(r.status).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(['cpu', 'cuda']).toContain(report.device);
    expect(report.gloo).toHaveProperty('available');
  });

  test('info with a device that cannot be used reports it instead of failing', () => {
    const r = run(['info'], { HB_DEVICE: 'cuda:99' });
    expect(r.status).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.device).toBeNull();
    expect(report.deviceError).toMatch(/^HB_DEVICE=cuda:99: /);
    expect(report.cuda).toHaveProperty('compiled');
  });

  test('an addon that does not load is one line naming it, no stack trace', () => {
    const r = run(['info'], { HB_ADDON: '/nonexistent/hb.node' });
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toBe("hb-ts: HB_ADDON=/nonexistent/hb.node does not load (Cannot find module '/nonexistent/hb.node'); unset HB_ADDON to use the package's own build");
  });

  test('--version prints the package version, with or without a working addon', () => {
    for (const env of [{}, { HB_ADDON: '/nonexistent/hb.node' }]) {
      const r = run(['--version'], env);
      expect(r.status).toBe(0);
      expect(r.stdout.trim()).toBe(require('../package.json').version);
    }
  });
});
