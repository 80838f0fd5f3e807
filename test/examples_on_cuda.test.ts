// The DLRM example end to end on the CUDA code paths: on a GPU (HB_DEVICE=cuda), or on the
// emulated device of an HB_CUDA_EMULATE build with blocks in a seeded order and poisoned
// memory. It must reach the CPU run's loss and AUC (seeded, so both runs start alike);
// only float rounding may differ (libm vs CUDA's functions, cuBLAS's summation order).
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { cudaAvailable, cudaEmulated, loadedAddonPath } from './support/devices';
import { repoRoot } from './support/processes';

const describeOnCuda = cudaAvailable ? describe : describe.skip;

describeOnCuda('examples/dlrm.ts on CUDA', () => {
  let outDir = '';
  beforeAll(() => {
    // Inside the checkout (git-ignored), so the compiled example finds node_modules.
    outDir = fs.mkdtempSync(path.join(repoRoot, 'build-examples-test-'));
    const tsc = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', path.join(repoRoot, 'tsconfig.examples.json'), '--outDir', outDir], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(tsc.stdout + tsc.stderr).toBe('');
  }, 180_000);
  afterAll(() => fs.rmSync(outDir, { recursive: true, force: true }));

  function run(device: string, extraEnv: Record<string, string> = {}): { auc: number; loss: number } {
    const r = spawnSync(process.execPath, [path.join(outDir, 'examples', 'dlrm.js')], {
      encoding: 'utf8',
      timeout: 240_000,
      env: { ...process.env, HB_ADDON: loadedAddonPath(), HB_DEVICE: device, ...extraEnv },
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const m = /DLRM eval AUC ([0-9.]+), loss ([0-9.]+) at step 195/.exec(r.stdout);
    expect(m).not.toBeNull();
    return { auc: Number(m![1]), loss: Number(m![2]) };
  }

  test('trains to the CPU run\'s loss and AUC', () => {
    const cpu = run('cpu');
    const gpu = cudaEmulated ? run('cuda-emulated', { HB_CUDA_EMULATE_SEED: '3', HB_CUDA_EMULATE_POISON: '1' }) : run('cuda');
    expect(cpu.auc).toBeGreaterThan(0.58); // the planted signal is learnt
    expect(Math.abs(gpu.loss - cpu.loss)).toBeLessThan(2e-4);
    expect(Math.abs(gpu.auc - cpu.auc)).toBeLessThan(2e-3);
  }, 480_000);
});
