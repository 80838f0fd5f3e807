#!/usr/bin/env node
// Feature-column transforms over a whole column of 1M Criteo-like strings (8 hex
// digits), next to a plain-JS loop that only reads the same bytes through the same
// offsets (no hashing), timed interleaved in the same run.
//
//   node bench/feature_transform.bench.js [--values 1000000] [--vocabulary 100000] [--iters 9]
'use strict';
const path = require('path');
const hb = require(path.resolve(__dirname, '..'));
const { describeMachine } = require('./machine');
const { option } = require('./options');
const { seededUint32 } = require('./workloads');
const { record } = require('./report');

const n = option('values', 1_000_000);
const vocabularySize = option('vocabulary', 100_000);
const iters = option('iters', 9);

function hexStrings(count, seed, distinct) {
  const random = seededUint32(seed);
  const out = new Array(count);
  for (let i = 0; i < count; i++) out[i] = (random() % distinct).toString(16).padStart(8, '0');
  return out;
}

// The baseline: touch every byte of every value through its offsets, as the hash must.
function readBytes(column) {
  const { bytes, offsets } = column;
  let sum = 0;
  for (let i = 0; i + 1 < offsets.length; i++) {
    let h = 0;
    for (let j = offsets[i]; j < offsets[i + 1]; j++) h = (h + bytes[j]) | 0;
    sum = (sum + h) | 0;
  }
  return sum;
}

function median(times) {
  return times.slice().sort((a, b) => a - b)[Math.floor(times.length / 2)];
}

function time(fn) {
  const start = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

function main() {
  console.log(describeMachine(hb));
  const fc = hb.featureColumn;
  const column = hb.StringColumn.fromStrings(hexStrings(n, 1, 4 * vocabularySize));
  const other = hb.StringColumn.fromStrings(hexStrings(n, 2, 1000));
  const features = { c1: column, c2: other };
  const cases = [
    ['hash bucket (Fingerprint64 mod 1e6)', () => fc.categoricalColumnWithHashBucket('c1', 1_000_000).transform(features)],
    [`vocabulary list (${vocabularySize} entries, 10 OOV buckets)`, (() => {
      const entries = Array.from(new Set(hexStrings(2 * vocabularySize, 1, 4 * vocabularySize))).slice(0, vocabularySize);
      const vocab = fc.categoricalColumnWithVocabularyList('c1', entries, { numOovBuckets: 10 });
      return () => vocab.transform(features);
    })()],
    ['crossed (2 string features, sparse_cross_hashed)', () => fc.crossedColumn(['c1', 'c2'], 1_000_000).transform(features)],
  ];
  for (const [, fn] of cases) fn();
  readBytes(column);
  for (const [name, fn] of cases) {
    const transformTimes = [];
    const baselineTimes = [];
    for (let i = 0; i < iters; i++) {
      transformTimes.push(time(fn));
      baselineTimes.push(time(() => readBytes(column)));
    }
    const t = median(transformTimes);
    const b = median(baselineTimes);
    console.log(
      `${name}: ${n} values in ${(t * 1e3).toFixed(1)} ms = ${(n / t / 1e6).toFixed(1)} M values/s | ` +
        `plain-JS loop reading the same bytes: ${(n / b / 1e6).toFixed(1)} M values/s | ratio transform/read = ${(b / t).toFixed(2)}`,
    );
    record({ workload: `${name}, ${n} values vs reading their bytes`, value: n / t / 1e6, baseline: n / b / 1e6, unit: 'M values/s', baselineName: 'plain-JS loop reading the bytes' });
  }
}

main();
