// The SHA-256 of a checkpoint file, taken as its bytes go by. Natively where the addon
// finds OpenSSL's digest calls in the process (the code node's crypto runs): rows are
// hashed beside the thread that writes them, and files are read and hashed off the JS
// thread, the next piece read while the last is hashed. Elsewhere (or under
// HB_NATIVE_SHA256=0) node's crypto, over bytes read back into JS.
//
// Two kinds, by checkpoint format: 'stream', one SHA-256 over the whole file (hb-ts/2);
// 'pieces', SHA-256 over the concatenated SHA-256s of the file's 4 MiB pieces, the last
// one shorter (hb-ts/3). One SHA-256 stream runs on one core, slower than a disk reads;
// the pieces are hashed on every thread at once (native/io/piecewise_sha256.h).
import { createHash, Hash } from 'crypto';
import { native, NativeSha256 } from '../native';

export interface FileDigest {
  /** Adds bytes held in JS, now. */
  update(bytes: Uint8Array): void;
  /** The hex digest; no bytes may be added after it. */
  hex(): string;
  /** The addon's digest, for the calls that hash as they write or read; undefined in JS. */
  readonly native: NativeSha256 | undefined;
}

export type DigestKind = 'stream' | 'pieces';

/** The piece size of the 'pieces' digest: a fixed part of the format. */
export const DIGEST_PIECE_BYTES = 4 * 1024 * 1024;

class NativeDigest implements FileDigest {
  readonly native: NativeSha256;
  constructor(kind: DigestKind) {
    this.native = native.sha256New(kind === 'pieces');
  }
  update(bytes: Uint8Array): void {
    native.sha256Update(this.native, bytes);
  }
  hex(): string {
    return native.sha256Hex(this.native);
  }
}

class NodeDigest implements FileDigest {
  readonly native = undefined;
  private readonly hash: Hash = createHash('sha256');
  update(bytes: Uint8Array): void {
    this.hash.update(bytes);
  }
  hex(): string {
    return this.hash.digest('hex');
  }
}

/** The 'pieces' digest in JS: each 4 MiB piece's SHA-256, then the SHA-256 of those. */
class NodePiecesDigest implements FileDigest {
  readonly native = undefined;
  private readonly pieces = createHash('sha256');
  private current?: Hash;
  private filled = 0;
  update(bytes: Uint8Array): void {
    for (let at = 0; at < bytes.length; ) {
      const take = Math.min(bytes.length - at, DIGEST_PIECE_BYTES - this.filled);
      this.current ??= createHash('sha256');
      this.current.update(bytes.subarray(at, at + take));
      this.filled += take;
      at += take;
      if (this.filled === DIGEST_PIECE_BYTES) this.closePiece();
    }
  }
  hex(): string {
    if (this.filled > 0) this.closePiece();
    return this.pieces.digest('hex');
  }
  private closePiece(): void {
    this.pieces.update(this.current!.digest());
    this.current = undefined;
    this.filled = 0;
  }
}

/** Whether digests are the addon's here (it found OpenSSL's calls, and HB_NATIVE_SHA256 is not 0). */
export function nativeDigests(): boolean {
  return process.env.HB_NATIVE_SHA256 !== '0' && native.sha256Available();
}

/** A new digest of `kind`, native when the addon can take one. */
export function newFileDigest(kind: DigestKind): FileDigest {
  if (nativeDigests()) return new NativeDigest(kind);
  return kind === 'pieces' ? new NodePiecesDigest() : new NodeDigest();
}
