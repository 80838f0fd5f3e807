// A checkpoint file's digest computed from its definition, apart from lib/: the whole
// file with the 64 characters that record the digest read as '0'; hb-ts/3 takes the
// SHA-256 of each 4 MiB piece of that (the last one shorter) and then the SHA-256 of
// those 32-byte digests one after the other; hb-ts/2 took one SHA-256 of it all.
import { createHash } from 'crypto';

export const DIGEST_PREFIX = '{"__metadata__":{"sha256":"';
export const DIGEST_AT = 8 + DIGEST_PREFIX.length;
const PIECE_BYTES = 4 * 1024 * 1024;

export function checkpointDigest(fileBytes: Buffer, format: 'hb-ts/3' | 'hb-ts/2' = 'hb-ts/3'): string {
  const blanked = Buffer.from(fileBytes);
  blanked.fill('0'.charCodeAt(0), DIGEST_AT, DIGEST_AT + 64);
  if (format === 'hb-ts/2') return createHash('sha256').update(blanked).digest('hex');
  const pieces: Buffer[] = [];
  for (let at = 0; at < blanked.length; at += PIECE_BYTES) pieces.push(createHash('sha256').update(blanked.subarray(at, at + PIECE_BYTES)).digest());
  return createHash('sha256').update(Buffer.concat(pieces)).digest('hex');
}
