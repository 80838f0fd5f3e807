// The SHA-256 of a checkpoint file, taken as its bytes go by. Natively where the addon
// finds OpenSSL's digest calls in the process (the code node's crypto runs): rows are
// hashed beside the thread that writes them, and files are read and hashed off the JS
// thread, the next piece read while the last is hashed. Elsewhere (or under
// HB_NATIVE_SHA256=0) node's crypto, over bytes read back into JS.
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

class NativeDigest implements FileDigest {
  readonly native = native.sha256New();
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

/** A new SHA-256, native when the addon can take one. */
export function newFileDigest(): FileDigest {
  return process.env.HB_NATIVE_SHA256 !== '0' && native.sha256Available() ? new NativeDigest() : new NodeDigest();
}
