import * as hb from '../../lib';
import { native } from '../../lib/native';

/** True when a CUDA device is usable here; CUDA suites run only then. */
export const cudaAvailable = hb.backend().cuda.deviceCount > 0;

/** An HB_CUDA_EMULATE build: the CUDA device runs the CUDA kernels on host threads. */
export const cudaEmulated = hb.backend().cuda.emulated;

interface CudaSchedule {
  label: string;
  scheduleSeed: number;
  poison: boolean;
}

/**
 * The schedules every CUDA suite runs under. On the emulated device: blocks concurrently
 * on the thread pool, then twice with blocks and threads started in a seeded order and
 * device and shared memory poisoned (NaN / -1 until written), so a missing barrier, a
 * result that depends on which block ran first, or a read of memory nothing wrote shows
 * as a difference from the CPU. On a GPU: the GPU's own schedule, once.
 */
export const cudaSchedules: CudaSchedule[] = cudaEmulated
  ? [
      { label: 'emulated, blocks concurrent', scheduleSeed: 0, poison: false },
      { label: 'emulated, seeded order 1, poisoned memory', scheduleSeed: 1, poison: true },
      { label: 'emulated, seeded order 2, poisoned memory', scheduleSeed: 2, poison: true },
    ]
  : [{ label: 'GPU', scheduleSeed: 0, poison: false }];

/**
 * describe() for a CUDA suite: skipped where no CUDA device is usable, else once per
 * schedule, its title tagged "[CUDA: ...]" (the summary reporter counts those tests).
 */
export function describeCuda(title: string, body: () => void): void {
  if (!cudaAvailable) {
    describe.skip(title, body);
    return;
  }
  for (const schedule of cudaSchedules) {
    describe(`${title} [CUDA: ${schedule.label}]`, () => {
      if (cudaEmulated) {
        let before = { scheduleSeed: 0, poison: false };
        beforeAll(() => {
          before = native.cudaEmulation();
          native.setCudaEmulation({ scheduleSeed: schedule.scheduleSeed, poison: schedule.poison });
        });
        afterAll(() => native.setCudaEmulation({ scheduleSeed: before.scheduleSeed, poison: before.poison }));
      }
      body();
    });
  }
}

/** The addon file the suite loaded (HB_ADDON, else the cmake-js / node-gyp output). */
export function loadedAddonPath(): string {
  const path = require('path') as typeof import('path');
  if (process.env.HB_ADDON) return path.resolve(process.env.HB_ADDON);
  const nodeGypBuild = require('node-gyp-build') as { resolve(dir: string): string };
  return nodeGypBuild.resolve(path.resolve(__dirname, '../..'));
}

/**
 * Runs the calling file's tests with `device` as the current device (hb.setDevice's
 * choice, process-wide), restoring the previous one after. Files that check the CPU
 * kernels bit for bit pin 'cpu' so a GPU machine's HB_DEVICE=cuda run checks them too.
 */
export function pinDevice(device: hb.DeviceSpec): void {
  let previous: hb.DeviceSpec = 'cpu';
  beforeAll(() => {
    previous = hb.currentDevice() as hb.DeviceSpec;
    hb.setDevice(device);
  });
  afterAll(() => hb.setDevice(previous));
}
