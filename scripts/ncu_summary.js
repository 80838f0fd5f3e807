#!/usr/bin/env node
// The GPU time of each CUDA kernel (by name, all shapes and calls together), from Nsight
// Compute's CSV (`ncu --csv --print-summary per-kernel`): the 20 largest, in ms.
//   node scripts/ncu_summary.js ncu.csv
'use strict';
const fs = require('fs');

const file = process.argv[2];
if (!file) {
  console.error('usage: node scripts/ncu_summary.js <ncu.csv>');
  process.exit(2);
}
// Rows are quoted CSV; the header names the columns.
const rows = fs
  .readFileSync(file, 'utf8')
  .split('\n')
  .filter((line) => line.startsWith('"'))
  .map((line) => JSON.parse(`[${line}]`));
if (rows.length < 2) {
  console.error(`${file}: no kernel rows`);
  process.exit(1);
}
const header = rows[0];
const column = (name) => {
  const at = header.indexOf(name);
  if (at < 0) throw new Error(`${file}: no '${name}' column`);
  return at;
};
const [kernel, calls, average] = [column('Kernel Name'), column('Invocations'), column('Average')];
const byName = new Map();
for (const row of rows.slice(1)) {
  const name = row[kernel].split('(')[0];
  const ns = Number(row[calls]) * Number(String(row[average]).replace(/,/g, ''));
  byName.set(name, (byName.get(name) || 0) + ns);
}
const total = [...byName.values()].reduce((a, b) => a + b, 0);
console.log(`${(total / 1e6).toFixed(2).padStart(9)} ms  all kernels`);
[...byName]
  .sort((a, b) => b[1] - a[1])
  .slice(0, 20)
  .forEach(([name, ns]) => console.log(`${(ns / 1e6).toFixed(2).padStart(9)} ms  ${name}`));
