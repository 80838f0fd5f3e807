// One checkpoint file restored and verified in one pass. A restore used to hash the whole
// file (SHA-256, one stream on one core) and then read it again into the tables: where
// the disk or the hash is the bound, that is half the rate a single read reaches. Here
// each read adds its bytes to the file's digest as they land in the target (natively: on
// the host beside the thread that reads the next piece, for a GPU tensor in its staging
// buffer). The digest is over the file's 4 MiB pieces (lib/io/piece_digests.ts), so reads
// may come in any order: a read that starts where an earlier one ended (or less than a
// piece after: the bytes between are hashed) continues its run, any other starts a run of
// its own. verified() carries each run on to the end of the piece it ends in, hashes the
// pieces no run held whole (those no read reached, and those a run begins inside), and
// compares the digest with the header's. Reads in long runs (tables reading their
// tensors, several dynamic tables) read little twice; tensors smaller than a piece read
// backwards still read nearly all of the file twice.
//
// The values land before they are verified: a caller reading this way uses nothing it
// read (trains, saves, serves) until verified() resolves, and when it rejects reads every
// tensor again from another checkpoint (CheckpointManager.restore does both).
import { native, NativeTensorHandle } from '../native';
import { CheckpointHeader, checkFileDigest, hashFileRange, planRowRead, readHeaderForDigest, RowReadOptions, verifyCheckpoint } from './checkpoint_file';
import { DIGEST_PIECE_BYTES, nativeDigests } from './file_digest';
import { PieceDigests, PieceRun } from './piece_digests';

export class VerifiedReads {
  /** Runs the reads left off, by the file offset where each ends: a read that starts there continues it. */
  private readonly runs = new Map<number, PieceRun>();
  /** Until verified() starts (in the queue, so reads queued before it are hashed too). */
  private hashing = false;
  /** Reads and hashes run one after the other, so each run takes its bytes in file order. */
  private queue: Promise<unknown> = Promise.resolve();
  private outcome?: Promise<void>;

  private constructor(
    readonly file: string,
    readonly header: CheckpointHeader,
    /** Undefined when the file was verified whole at open. */
    private readonly pieces: PieceDigests | undefined,
    /** The file's bytes before the data, the digest read as zeros. */
    private readonly head: Buffer,
  ) {}

  /**
   * Reads and checks the file's header (truncation, layout, name); the data is verified by
   * the reads and verified(). Without the addon's digest (HB_NATIVE_SHA256=0), or for a
   * file whose digest is one stream (hb-ts/2), a read cannot hash what it loads in any
   * order, so the whole file is verified here, before any read.
   */
  static async open(file: string): Promise<VerifiedReads> {
    const { header, head } = await readHeaderForDigest(file);
    if (header.digestKind !== 'pieces' || !nativeDigests()) {
      const reads = new VerifiedReads(file, header, undefined, head);
      await (reads.outcome = verifyCheckpoint(file).then((verified) => reads.checkSameFile(verified)));
      return reads;
    }
    const reads = new VerifiedReads(file, header, new PieceDigests(header.dataStart + header.dataLength), head);
    reads.hashing = true;
    // The header begins the run a read of the first tensor continues.
    const run = reads.pieces!.startRun(0);
    native.sha256Update(run.digest, head);
    run.end = head.length;
    reads.runs.set(run.end, run);
    return reads;
  }

  /** loadTensorRows on this file, its bytes hashed as they land (until verified() is called). */
  loadRows(name: string, target: NativeTensorHandle, options?: RowReadOptions): Promise<void> {
    const read = planRowRead(this.file, this.header, name, target, options);
    return this.inOrder(async () => {
      const pieces = this.pieces;
      if (!this.hashing || !pieces || read.begin === read.end) return read.run();
      const at = this.header.dataStart + read.begin;
      // A read that fails leaves its run's digest unknown: the run is dropped (out of the
      // map first), and its pieces are hashed again at verified().
      const run = (await this.runReaching(at)) ?? pieces.startRun(at);
      await read.run(run.digest);
      run.end = this.header.dataStart + read.end;
      const ending = this.runs.get(run.end);
      if (ending) pieces.close(ending);
      this.runs.set(run.end, run);
    });
  }

  /**
   * Resolves once the whole file's digest matched its header (hashing the pieces no read
   * held whole); rejects with an Error naming the file otherwise. Reads made after it are
   * not hashed.
   */
  verified(): Promise<void> {
    this.outcome ??= this.inOrder(async () => {
      this.hashing = false;
      const pieces = this.pieces!;
      await this.finishEndPieces();
      for (const run of this.runs.values()) pieces.close(run);
      this.runs.clear();
      for (const [begin, end] of pieces.missing()) {
        const run = pieces.startRun(begin);
        if (begin < this.head.length) native.sha256Update(run.digest, this.head.subarray(begin, Math.min(end, this.head.length)));
        const from = Math.max(begin, this.head.length);
        if (end > from) await hashFileRange(this.file, run.digest, from, end - from);
        run.end = end;
        pieces.close(run);
      }
      if (pieces.changed) throw new Error(`Checkpoint ${this.file}: the file changed while it was read`);
      checkFileDigest(this.file, this.header, pieces.hex());
    });
    return this.outcome;
  }

  /**
   * Carries each run that ends inside a piece it began (or began before) on to that piece's
   * end, hashing the bytes no read brought, where no other run holds the piece whole: fewer
   * bytes than hashing the whole piece again (where a run of int64 tensors meets the float
   * ones, the piece's float part).
   */
  private async finishEndPieces(): Promise<void> {
    const pieces = this.pieces!;
    const runs = [...this.runs.values()];
    for (const run of runs) {
      // Closed meanwhile (another run was carried on to where it ends).
      if (this.runs.get(run.end) !== run) continue;
      const pieceBegin = Math.floor(run.end / DIGEST_PIECE_BYTES) * DIGEST_PIECE_BYTES;
      const pieceEnd = Math.min(pieceBegin + DIGEST_PIECE_BYTES, pieces.fileSize);
      if (run.end === pieceBegin || run.end >= pieceEnd || run.origin > pieceBegin) continue;
      const held = pieces.has(pieceBegin / DIGEST_PIECE_BYTES) || runs.some((other) => other.origin <= pieceBegin && other.end >= pieceEnd);
      if (held) continue;
      this.runs.delete(run.end);
      await hashFileRange(this.file, run.digest, run.end, pieceEnd - run.end);
      run.end = pieceEnd;
      const ending = this.runs.get(run.end);
      if (ending) pieces.close(ending);
      this.runs.set(run.end, run);
    }
  }

  /**
   * The run a read from file offset `at` continues, taken out of the map: one that ends
   * there, or one that ends less than a piece before, the bytes between hashed into it
   * (fewer than verified() would read again for the piece neither run then holds whole).
   */
  private async runReaching(at: number): Promise<PieceRun | undefined> {
    let near: PieceRun | undefined;
    for (const run of this.runs.values()) {
      if (run.end <= at && at - run.end < DIGEST_PIECE_BYTES && (!near || run.end > near.end)) near = run;
    }
    if (!near) return undefined;
    this.runs.delete(near.end);
    if (near.end < at) await hashFileRange(this.file, near.digest, near.end, at - near.end);
    near.end = at;
    return near;
  }

  private checkSameFile(verified: CheckpointHeader): void {
    if (verified.sha256 !== this.header.sha256) throw new Error(`Checkpoint ${this.file}: the file changed while it was read`);
  }

  private inOrder<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task);
    this.queue = run.catch(() => undefined);
    return run;
  }
}
