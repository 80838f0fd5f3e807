// The addon's checkpoint digests (sha256New, sha256Update, sha256TakePieces, sha256Hex,
// fileSha256Update) given hostile arguments (origins past every edge, arrays shared,
// detached or resized while a read hashes, calls after the digest was taken, handles of
// other kinds), and, where a run of bytes from a random origin goes through, the 4 MiB
// pieces it hands over checked against node's SHA-256 of the same pieces.
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const { native } = require(path.join(__dirname, '..', '..', 'dist', 'native.js'));

const PIECE = 4 * 1024 * 1024;

function violation(message) {
  const error = new Error(`digest invariant: ${message}`);
  error.code = 'HB_ERR_INTERNAL';
  return error;
}

/** The digests of the pieces a run over [origin, end) of `bytes` holds whole (see piecewise_sha256.h). */
function expectedPieces(bytes, origin, end, fileEnds) {
  const first = Math.ceil(origin / PIECE);
  let last = Math.floor(end / PIECE);
  if (fileEnds && end % PIECE !== 0 && Math.floor(end / PIECE) >= first) last += 1;
  const out = [];
  for (let k = first; k < last; k++) out.push(crypto.createHash('sha256').update(bytes.subarray(k * PIECE, Math.min((k + 1) * PIECE, end))).digest());
  return Buffer.concat(out);
}

module.exports = {
  name: 'digests',
  async run(r, { attempt, scratch }) {
    const length = r.pick([0, 1, 100, PIECE - 1, PIECE, PIECE + 1, 2 * PIECE + r.int(0, 4096), r.int(0, 3 * PIECE)]);
    const bytes = crypto.randomBytes(length);
    // No origin given is origin 0.
    const given = r.chance(0.8) ? r.int(0, length) : r.pick([undefined, -1, NaN, 2 ** 53, 2 ** 53 - 1, 1.5, '7', null, Infinity]);
    const origin = given === undefined ? 0 : given;
    const pieces = r.chance(0.9) ? true : r.pick([false, undefined, 'yes', 1, null]);
    const digest = await attempt('sha256New', () => native.sha256New(pieces, given));
    if (!digest) return;
    const valid = pieces === true && Number.isSafeInteger(origin) && origin >= 0 && origin <= length;
    const end = valid ? r.int(origin, length) : length;
    // The run's bytes in a few updates, some from the JS thread, some read from a file.
    let clean = valid;
    const file = path.join(scratch, `digest-${r.int(0, 1e9)}.bin`);
    if (r.chance(0.3)) fs.writeFileSync(file, bytes);
    for (let at = valid ? origin : 0; at < end; ) {
      const next = r.chance(0.3) ? end : Math.min(end, at + r.pick([1, 63, 64, PIECE - 1, PIECE, r.int(1, PIECE * 2)]));
      if (fs.existsSync(file) && r.chance(0.5)) {
        const fh = await fs.promises.open(file, 'r');
        try {
          const position = r.chance(0.9) ? at : r.pick([-1, length + 1, NaN, 2 ** 60]);
          const ok = await attempt('fileSha256Update', () => native.fileSha256Update(digest, fh.fd, file, position, next - at).then(() => true));
          if (!ok || position !== at) clean = false;
        } finally {
          await fh.close();
        }
      } else {
        // Sometimes in an odd state (shared, detached, resizable): refused with an Error.
        const made = r.typedArray('u8', next - at, () => 0, 0.15);
        if (made.state === 'plain' || made.state === 'offset') made.array.set(bytes.subarray(at, next));
        const ok = await attempt('sha256Update', () => (native.sha256Update(digest, made.array), true));
        if (!ok || made.state === 'detached' || made.state === 'shared' || made.state === 'resizable') clean = false;
      }
      at = next;
    }
    const fileEnds = r.chance(0.8) ? end === length : r.pick([true, false, 1, 'true', undefined]);
    const taken = await attempt('sha256TakePieces', () => native.sha256TakePieces(digest, fileEnds));
    if (taken && clean && typeof fileEnds === 'boolean') {
      const want = expectedPieces(bytes, origin, end, fileEnds);
      if (!Buffer.from(taken).equals(want)) {
        throw violation(`a run over [${origin}, ${end}) of ${length} bytes (fileEnds ${fileEnds}) handed over ${taken.byteLength / 32} pieces unlike node's ${want.byteLength / 32}`);
      }
    }
    // Used after it was taken, or as what it is not.
    await attempt('sha256Update after', () => native.sha256Update(digest, new Uint8Array(3)));
    await attempt('sha256Hex after', () => native.sha256Hex(digest));
    await attempt('sha256TakePieces again', () => native.sha256TakePieces(digest, true));
    await attempt('sha256TakePieces of another kind', () => native.sha256TakePieces(r.pick([native.sha256New(), {}, null, 5, native.tensorFromTypedArray(new Float32Array(2), [2], 'cpu')]), true));
    fs.rmSync(file, { force: true });
  },
};
