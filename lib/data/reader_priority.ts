// Reader threads run at a lower CPU priority than the rest of the process (nice 19 by
// default; HB_READER_NICE sets it, 0 keeps the process's). Where the training step keeps
// every core busy, a reader at the same priority takes a core from one of the step's
// threads in the middle of a parallel loop, and the others spin at the loop's end waiting
// for it; at a lower one it mostly runs when the step's threads wait or yield. The rows
// come out the same, only the interleaving changes. On a 2-vCPU EPYC VM (Zen 5),
// `npx hb-ts train`, six pairs of runs alternated: 276-320k -> 298-342k samples/s, each
// pair 3-10% faster (DLRM fed by Dataset.synthetic, six pairs: 291-406k -> 350-416k, one
// pair slower; on batches made in advance 382-466k).
import * as os from 'node:os';

/** The niceness reader threads take: HB_READER_NICE (an integer 0-19), 19 when unset. */
export function readerNice(env: NodeJS.ProcessEnv = process.env): number {
  const text = env.HB_READER_NICE;
  if (text === undefined || text === '') return 19;
  const nice = Number(text.trim());
  if (!/^\d{1,2}$/.test(text.trim()) || nice > 19) {
    throw new RangeError(`hb.data: HB_READER_NICE must be an integer from 0 (the process's priority) to 19 (the lowest), got '${text}'`);
  }
  return nice;
}

/**
 * Lowers the calling thread's priority to `nice` (never raises it). Linux only: there a
 * thread has a niceness of its own, where elsewhere setpriority changes the whole
 * process. A system that refuses (a sandbox) leaves the thread as it was.
 */
export function lowerThisThreadsPriority(nice: number): void {
  if (process.platform !== 'linux' || !(nice > 0)) return;
  try {
    if (os.getPriority(0) < nice) os.setPriority(0, nice);
  } catch {
    // Keeping the priority costs speed only.
  }
}
