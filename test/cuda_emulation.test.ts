// The emulated CUDA device itself (HB_CUDA_EMULATE=ON builds): that barriers, warp
// intrinsics and atomics mean what they mean on a GPU, that the race checks catch a
// missing barrier, and that what a GPU would refuse or hang on is an error here. The
// CUDA kernels' own tests (cuda*.test.ts) run on this device in CI.
import { native } from '../lib/native';
import { cudaEmulated } from './support/devices';

const describeEmulated = cudaEmulated ? describe : describe.skip;

function withSchedule<T>(scheduleSeed: number, poison: boolean, body: () => T): T {
  const before = native.cudaEmulation();
  native.setCudaEmulation({ scheduleSeed, poison });
  try {
    return body();
  } finally {
    native.setCudaEmulation({ scheduleSeed: before.scheduleSeed, poison: before.poison });
  }
}

const schedules: Array<[number, boolean]> = [[0, false], [1, true], [7, true], [1234, false]];

describeEmulated('the emulated CUDA device', () => {
  test.each(schedules)('warp intrinsics follow CUDA\'s definitions (schedule seed %d, poison %s)', (seed, poison) => {
    const { values, error } = withSchedule(seed, poison, () => native.cudaEmulationSelfTest('warp_intrinsics'));
    expect(error).toBe('');
    const perThread = 8;
    for (let block = 0; block < 2; block++) {
      for (let tid = 0; tid < 48; tid++) {
        const warp = tid >> 5;
        const lane = tid & 31;
        const lanes = warp === 0 ? 32 : 16; // the second warp of a 48-thread block has 16 lanes
        const value = (l: number) => block * 100 + warp * 32 + l;
        const got = values.slice((block * 48 + tid) * perThread, (block * 48 + tid + 1) * perThread);
        expect(got[0]).toBe(value(5)); // __shfl_sync from lane 5
        expect(got[1]).toBe(value(lane === 0 ? 0 : lane - 1)); // __shfl_up_sync by 1: lane 0 keeps its own
        if (lane + 3 < lanes) expect(got[2]).toBe(value(lane + 3)); // __shfl_down_sync by 3 (past the last lane: undefined)
        expect(got[3]).toBe(value(lane ^ 1)); // __shfl_xor_sync
        expect(got[4]).toBe(value((lane & ~7) + 3)); // __shfl_sync with width 8
        let ballot = 0;
        for (let l = 0; l < lanes; l++) if (value(l) % 3 === 0) ballot |= 1 << l;
        expect(got[5]).toBe(ballot >>> 0); // __ballot_sync
        expect(got[6]).toBe(1 + (warp === 0 ? 2 : 0)); // __all_sync(v >= 0) + 2 * __any_sync(v % 100 == 7)
        if (warp === 0) {
          let sum = 0;
          for (let l = 0; l < 32; l++) sum += value(l);
          expect(got[7]).toBe(sum); // an xor butterfly leaves the warp's sum in every lane
        }
      }
    }
  });

  test.each(schedules)('a shared-memory tree sum with __syncthreads is exact (schedule seed %d, poison %s)', (seed, poison) => {
    const { values, error } = withSchedule(seed, poison, () => native.cudaEmulationSelfTest('block_sum'));
    expect(error).toBe('');
    const expected = [0, 1, 2].map((block) => {
      let sum = 0;
      for (let t = 0; t < 256; t++) sum += (block * 256 + t) % 97;
      return sum;
    });
    expect(values).toEqual(expected);
  });

  test('the race check catches the same sum without its barriers', () => {
    const correct = withSchedule(0, false, () => native.cudaEmulationSelfTest('block_sum').values);
    for (const seed of [1, 2, 3]) {
      const racy = withSchedule(seed, true, () => native.cudaEmulationSelfTest('block_sum_without_barriers'));
      // Threads read partial sums the others have not written yet: poison (NaN) or wrong.
      expect(racy.values.some((v, i) => !(v === correct[i]))).toBe(true);
    }
  });

  test('a __syncthreads that some threads of the block never reach is a launch failure', () => {
    const { error } = native.cudaEmulationSelfTest('divergent_barrier');
    expect(error).toMatch(/^cudaErrorLaunchFailure: block \(0,0,0\): 10 of its 64 threads exited without reaching a __syncthreads/);
  });

  test('a warp intrinsic whose mask names lanes that exited deadlocks, reported instead of hanging', () => {
    const { error } = native.cudaEmulationSelfTest('warp_mask_with_exited_lanes');
    expect(error).toMatch(/^cudaErrorLaunchFailure: block \(0,0,0\) deadlocked: 0 thread\(s\) wait at __syncthreads and 16 at a warp intrinsic/);
  });

  test('atomics are atomic across blocks running on several host threads', () => {
    for (const [seed, poison] of schedules) {
      const { values, error } = withSchedule(seed, poison, () => native.cudaEmulationSelfTest('atomics'));
      expect(error).toBe('');
      expect(values).toEqual([64 * 128, 64 * 128 - 1, 64 * 128 * 0.5]);
    }
  });

  test("the CUDA wire cast (float16 / bfloat16) equals the CPU's on every edge, both ways", () => {
    for (const [seed, poison] of schedules) {
      const { values, error } = withSchedule(seed, poison, () => native.cudaEmulationSelfTest('wire_cast'));
      expect(error).toBe('');
      expect(values).toEqual([0, 0, 0, 0, 5 * 65536]);
    }
  });

  test('what a GPU refuses is an error: an oversized block, a copy past an allocation, a double free', () => {
    expect(native.cudaEmulationSelfTest('oversized_block').error).toMatch(/^cudaErrorInvalidConfiguration: invalid launch configuration: a block of 2048x1x1 threads/);
    expect(native.cudaEmulationSelfTest('copy_past_allocation').error).toMatch(/^cudaErrorInvalidValue: cudaMemcpy: the source range \[404 bytes\] is not inside one device allocation/);
    expect(native.cudaEmulationSelfTest('double_free').error).toMatch(/^cudaErrorInvalidDevicePointer: cudaFree of a pointer that is not a live device allocation/);
    expect(() => native.cudaEmulationSelfTest('no_such_test')).toThrow(/cudaEmulationSelfTest: no emulation self-test named 'no_such_test'/);
  });

  // As on a GPU, a stream's work runs after the call that queues it: by the time the host
  // waits for the stream (or an event on it), not before. So a result read before that
  // wait, a page-locked buffer reused too soon, or memory freed under queued work shows.
  describe('streams queue their work until the host waits for them', () => {
    const withDeferral = <T>(deferred: boolean, body: () => T): T => {
      const before = native.cudaEmulation();
      native.setCudaEmulation({ scheduleSeed: before.scheduleSeed, poison: before.poison, deferred });
      try {
        return body();
      } finally {
        native.setCudaEmulation({ scheduleSeed: before.scheduleSeed, poison: before.poison, deferred: before.deferred });
      }
    };

    test('a kernel runs at the wait, its event is ready then, and the wait is counted', () => {
      const { values, error } = withDeferral(true, () => native.cudaEmulationSelfTest('deferred_stream'));
      expect(error).toBe('');
      expect(values).toEqual([0, 7, 1, 0, 1]);
      // With deferral off (HB_CUDA_EMULATE_DEFER=0) the kernel runs when launched.
      expect(withDeferral(false, () => native.cudaEmulationSelfTest('deferred_stream')).values).toEqual([7, 7, 0, 0, 1]);
    });

    test('copies: from page-locked memory read when they run, from pageable memory at the call, into pageable memory done on return', () => {
      const { values, error } = withDeferral(true, () => native.cudaEmulationSelfTest('host_copies'));
      expect(error).toBe('');
      expect(values).toEqual([2, 1, 5]);
    });

    test('memory freed before a queued copy ran is the copy stream\'s error', () => {
      expect(withDeferral(true, () => native.cudaEmulationSelfTest('free_before_copy')).error).toMatch(
        /^cudaErrorLaunchFailure: cudaMemcpyAsync: the source was freed before the copy ran \(stream order\)/,
      );
    });

    test('deferral is set and read back, a bad setting refused', () => {
      const { scheduleSeed, poison, deferred } = native.cudaEmulation();
      expect(() => native.setCudaEmulation({ scheduleSeed, poison, deferred: 1 as unknown as boolean })).toThrow(/deferred must be a boolean/);
      expect(native.cudaEmulation().deferred).toBe(deferred);
      expect(withDeferral(!deferred, () => native.cudaEmulation().deferred)).toBe(!deferred);
      expect(native.cudaEmulation().deferred).toBe(deferred);
    });
  });

  test('the schedule and poisoning are set and read back, bad settings refused; counters grow', () => {
    const before = native.cudaEmulation();
    expect(() => native.setCudaEmulation({ scheduleSeed: -1, poison: false })).toThrow(/scheduleSeed must be a whole number >= 0/);
    expect(() => native.setCudaEmulation({ scheduleSeed: 1, poison: 1 as unknown as boolean })).toThrow(/poison must be a boolean/);
    withSchedule(5, true, () => {
      expect(native.cudaEmulation()).toMatchObject({ scheduleSeed: 5, poison: true });
      native.cudaEmulationSelfTest('atomics');
    });
    const after = native.cudaEmulation();
    expect(after).toMatchObject({ scheduleSeed: before.scheduleSeed, poison: before.poison });
    expect(after.launches).toBeGreaterThan(before.launches);
    expect(after.threads - before.threads).toBeGreaterThanOrEqual(64 * 128);
  });
});

describe('builds without the emulation', () => {
  test('the emulation controls are Errors saying how to build them', () => {
    if (cudaEmulated) return; // covered above
    expect(() => native.cudaEmulation()).toThrow(/cudaEmulation: this build of hb-ts does not emulate CUDA \(build it with HB_CUDA_EMULATE=ON\)/);
    expect(() => native.cudaEmulationSelfTest('atomics')).toThrow(/does not emulate CUDA/);
  });
});
