// One checkpoint file restored and verified in one pass. A restore used to hash the whole
// file (SHA-256, one stream on one core) and then read it again into the tables: where
// the disk or the hash is the bound, that is half the rate a single read reaches. Here a
// read that starts where the hashed bytes end adds its bytes to the file's digest as they
// land in the target (natively: on the host beside the thread that reads the next piece,
// for a GPU tensor in its staging buffer), a read that starts further on first hashes the
// bytes it skips (read twice, then: tables restore in the file's order to avoid it), and
// verified() hashes what no read covered and compares the digest with the header's.
//
// The values land before they are verified: a caller reading this way uses nothing it
// read (trains, saves, serves) until verified() resolves, and when it rejects reads every
// tensor again from another checkpoint (CheckpointManager.restore does both).
import type { NativeTensorHandle } from '../native';
import { CheckpointHeader, checkFileDigest, hashDataRange, planRowRead, RowReadOptions, startFileDigest, verifyCheckpoint } from './checkpoint_file';
import type { FileDigest } from './file_digest';

export class VerifiedReads {
  /** Data bytes [0, hashedTo) are in the digest. */
  private hashedTo = 0;
  /** Set when a hashing read or hash failed part way: what the digest holds is unknown then. */
  private broken = false;
  /** Reads and hashes run one after the other, so the digest takes the bytes in file order. */
  private queue: Promise<unknown> = Promise.resolve();
  private outcome?: Promise<void>;

  private constructor(
    readonly file: string,
    readonly header: CheckpointHeader,
    private readonly digest: FileDigest,
  ) {}

  /**
   * Reads and checks the file's header (truncation, layout, name); the data is verified by
   * the reads and verified(). Without the addon's digest (HB_NATIVE_SHA256=0) a read cannot
   * hash what it loads, so the whole file is verified here, before any read.
   */
  static async open(file: string): Promise<VerifiedReads> {
    const { header, digest } = await startFileDigest(file);
    const reads = new VerifiedReads(file, header, digest);
    if (!digest.native) await reads.verified();
    return reads;
  }

  /** loadTensorRows on this file, its bytes hashed as they land where they continue the digest. */
  loadRows(name: string, target: NativeTensorHandle, options?: RowReadOptions): Promise<void> {
    const read = planRowRead(this.file, this.header, name, target, options);
    return this.inOrder(async () => {
      const native = this.digest.native;
      // Behind the hashed bytes (or within them): a plain read, those bytes are in the digest.
      if (this.broken || !native || read.begin < this.hashedTo || read.begin === read.end) return read.run();
      try {
        if (read.begin > this.hashedTo) {
          await hashDataRange(this.file, this.header, this.digest, this.hashedTo, read.begin);
          this.hashedTo = read.begin;
        }
        await read.run(native);
        this.hashedTo = read.end;
      } catch (err) {
        this.broken = true;
        throw err;
      }
    });
  }

  /**
   * Resolves once the whole file's digest matched its header (hashing the bytes no read
   * did); rejects with an Error naming the file otherwise. Reads made after it are not hashed.
   */
  verified(): Promise<void> {
    this.outcome ??= this.inOrder(async () => {
      try {
        if (this.broken) {
          // Started over: the digest's state after a failed read is unknown.
          const header = await verifyCheckpoint(this.file);
          if (header.sha256 !== this.header.sha256) throw new Error(`Checkpoint ${this.file}: the file changed while it was read`);
        } else {
          await hashDataRange(this.file, this.header, this.digest, this.hashedTo, this.header.dataLength);
          checkFileDigest(this.file, this.header, this.digest);
        }
      } finally {
        // The digest is finished: later reads are plain ones.
        this.hashedTo = this.header.dataLength;
      }
    });
    return this.outcome;
  }

  private inOrder<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task);
    this.queue = run.catch(() => undefined);
    return run;
  }
}
