// float32 <-> float16 / bfloat16 for tables exported at half size. Runs once per table at
// export and at load (not per step), rounding to nearest even as the addon's wire cast
// (native/kernels/wire_cast.h) does, so an exported row equals what a float16 wire sends.

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

export function toBFloat16(values: Float32Array): Uint16Array {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const out = new Uint16Array(values.length);
  for (let i = 0; i < bits.length; i++) {
    const x = bits[i];
    // NaN stays a (quiet) NaN; everything else rounds to nearest even on the low 16 bits.
    out[i] = (x & 0x7fffffff) > 0x7f800000 ? (x >>> 16) | 0x40 : (x + 0x7fff + ((x >>> 16) & 1)) >>> 16;
  }
  return out;
}

export function fromBFloat16(values: Uint16Array): Float32Array {
  const out = new Uint32Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = values[i] << 16;
  return new Float32Array(out.buffer);
}

function float16Of(x: number): number {
  f32[0] = x;
  const bits = u32[0];
  const sign = (bits >>> 16) & 0x8000;
  const exponent = (bits >>> 23) & 0xff;
  const mantissa = bits & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa ? 0x200 : 0);
  const e = exponent - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    // Subnormal: the implicit 1 joins the mantissa, shifted into place with rounding.
    const m = mantissa | 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rest = m & ((1 << shift) - 1);
    let r = m >>> shift;
    if (rest > half || (rest === half && (r & 1))) r++;
    return sign | r;
  }
  let r = (e << 10) | (mantissa >>> 13);
  const rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (r & 1))) r++;
  return sign | r;
}

export function toFloat16(values: Float32Array): Uint16Array {
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = float16Of(values[i]);
  return out;
}

let float16Table: Float32Array | undefined;

export function fromFloat16(values: Uint16Array): Float32Array {
  if (!float16Table) {
    float16Table = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) {
      const sign = h & 0x8000 ? -1 : 1;
      const e = (h >>> 10) & 0x1f;
      const m = h & 0x3ff;
      float16Table[h] = e === 0 ? sign * m * 2 ** -24 : e === 0x1f ? (m ? NaN : sign * Infinity) : sign * (1 + m / 1024) * 2 ** (e - 15);
    }
  }
  const out = new Float32Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = float16Table[values[i]];
  return out;
}
