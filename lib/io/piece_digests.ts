// The 'pieces' digest of one file (checkpoint format hb-ts/3, lib/io/file_digest.ts: the
// SHA-256 of the SHA-256s of its 4 MiB pieces) put together from runs of its bytes taken in
// any order. A restore reads tensors in the order tables ask for them, not the file's; a
// digest of one stream had to hash the bytes a read skipped, and those were read twice.
// Here each run hashes the pieces it passes through whole (natively, as the bytes land),
// and only the pieces no run held whole are read again at the end: at most the two a run
// starts and ends in.
import { createHash } from 'crypto';
import { native, NativeSha256 } from '../native';
import { DIGEST_PIECE_BYTES } from './file_digest';

/** Bytes of the file from `origin` to `end`, given to `digest` in order. */
export interface PieceRun {
  readonly digest: NativeSha256;
  readonly origin: number;
  end: number;
}

export class PieceDigests {
  /** The 32-byte digest of each piece, once a run held it whole. */
  private readonly pieces: Array<Buffer | undefined>;
  /** Two runs hashed one piece differently: the file changed while it was read. */
  private disagreed = false;

  constructor(readonly fileSize: number) {
    this.pieces = new Array<Buffer | undefined>(Math.ceil(fileSize / DIGEST_PIECE_BYTES));
  }

  /** A run from file offset `origin`: give its digest the bytes from there in order, move `end` along, then close it. */
  startRun(origin: number): PieceRun {
    return { digest: native.sha256New(true, origin), origin, end: origin };
  }

  /** Keeps the digests of the pieces `run` held whole; its digest takes no more bytes. */
  close(run: PieceRun): void {
    const taken = native.sha256TakePieces(run.digest, run.end === this.fileSize);
    const first = Math.ceil(run.origin / DIGEST_PIECE_BYTES);
    for (let k = 0; k * 32 < taken.byteLength; k++) {
      const digest = Buffer.from(taken.buffer, taken.byteOffset + 32 * k, 32);
      const known = this.pieces[first + k];
      if (known && !known.equals(digest)) this.disagreed = true;
      this.pieces[first + k] = digest;
    }
  }

  /** Whether piece `k` is in (a closed run held it whole). */
  has(k: number): boolean {
    return this.pieces[k] !== undefined;
  }

  /** File ranges [begin, end) of the pieces no closed run held whole, neighbours joined. */
  missing(): Array<[number, number]> {
    const ranges: Array<[number, number]> = [];
    for (let k = 0; k < this.pieces.length; k++) {
      if (this.pieces[k]) continue;
      const begin = k * DIGEST_PIECE_BYTES;
      const end = Math.min(begin + DIGEST_PIECE_BYTES, this.fileSize);
      const last = ranges[ranges.length - 1];
      if (last && last[1] === begin) last[1] = end;
      else ranges.push([begin, end]);
    }
    return ranges;
  }

  /** Whether two runs hashed the same piece differently (the file changed under the reads). */
  get changed(): boolean {
    return this.disagreed;
  }

  /** The file's digest in hex; every piece must be in. */
  hex(): string {
    const hash = createHash('sha256');
    // A loop over every index: forEach would pass over the holes of a sparse array.
    for (let k = 0; k < this.pieces.length; k++) {
      const digest = this.pieces[k];
      if (!digest) throw new Error(`internal error: piece ${k} of the file's digest was never hashed`);
      hash.update(digest);
    }
    return hash.digest('hex');
  }
}
