// The figures a bench prints next to a baseline, kept so that bench/run.js can write them
// up for the machine they were measured on: bench/results/<machine>.json (every record),
// .md (a table) and .svg (a bar chart of the ratios).
//
// A bench calls record() where it prints a ratio; bench/run.js names a JSONL file in
// HB_BENCH_RESULTS for each bench it starts. A bench run by hand (no HB_BENCH_RESULTS)
// only prints, as before.
'use strict';
const fs = require('fs');
const path = require('path');

/**
 * One figure of hb-ts against its baseline:
 *
 *   record({ workload: 'lookup (sum) vs a copy of the same bytes', value: 5.1, baseline: 6.4, unit: 'GB/s',
 *            baselineName: 'copy', target: 0.8 })
 *
 * - workload: what was measured, as the bench's line says it.
 * - value, baseline: hb-ts's figure and the baseline's, both in `unit`.
 * - higherIsBetter: whether a larger figure is the better one (GB/s, rows/s: true, the
 *   default; ms, bytes: false).
 * - ratio: how many times better hb-ts does than the baseline, so that > 1 always means
 *   hb-ts is ahead (faster, or smaller where smaller is better). By default value / baseline,
 *   or baseline / value when !higherIsBetter; pass it where there is no single pair of
 *   figures (a geometric mean).
 * - target: the least ratio wanted (an issue's target), where there is one.
 * - bench: by default the running script's name without `.bench.js`.
 *
 * Appends the record, with `met` (ratio >= target, or null without a target), as one JSON
 * line to the file HB_BENCH_RESULTS names, and returns it; does nothing without HB_BENCH_RESULTS.
 */
function record({ workload, value, baseline, unit, baselineName, higherIsBetter = true, ratio, target, bench }) {
  if (typeof workload !== 'string' || !workload) throw new TypeError('record: workload must name what was measured');
  const file = process.env.HB_BENCH_RESULTS;
  if (!file) return undefined;
  if (ratio === undefined && value !== undefined && baseline !== undefined) ratio = higherIsBetter ? value / baseline : baseline / value;
  const finite = (x) => (typeof x === 'number' && Number.isFinite(x) ? x : null);
  const entry = {
    bench: bench || scriptName(),
    workload,
    value: finite(value),
    baseline: finite(baseline),
    unit: unit || null,
    baselineName: baselineName || null,
    higherIsBetter,
    ratio: finite(ratio),
    target: finite(target),
  };
  entry.met = entry.target === null || entry.ratio === null ? null : entry.ratio >= entry.target;
  fs.appendFileSync(file, JSON.stringify(entry) + '\n');
  return entry;
}

function scriptName() {
  const main = require.main ? require.main.filename : process.argv[1] || 'unknown';
  return path.basename(main).replace(/\.bench\.js$|\.js$/, '');
}

/** The records in a JSONL file; a line cut short (a bench killed while writing it) is skipped. */
function readRecords(file) {
  if (!fs.existsSync(file)) return [];
  const records = [];
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      records.push(JSON.parse(line));
    } catch {
      // a partial line: the bench died mid-write
    }
  }
  return records;
}

// ---------------------------------------------------------------------------------------
// Writing up

/** 3 significant figures, grouped thousands, no exponent: what a table reader scans best. */
function figure(x) {
  if (x === null || x === undefined) return '–';
  const magnitude = Math.abs(x);
  if (magnitude >= 100 || magnitude === 0) return Math.round(x).toLocaleString('en-US');
  if (magnitude >= 10) return x.toFixed(1);
  if (magnitude >= 1) return x.toFixed(2);
  return Number(x.toPrecision(3)).toString();
}

// Targets are round numbers (1.5, 0.25): printed as written, not padded to 3 figures.
const targetText = (t) => String(Number(t.toPrecision(3)));
const ratioText = (r) => (r === null || r === undefined ? '–' : `${figure(r)}x`);
const metText = (r) => (r.met === null || r.met === undefined ? '' : r.met ? 'met' : 'NOT MET');

/**
 * results: { machine, slug, date, node, commit, records, benches: [{ bench, date, commit, result }] }.
 * A Markdown page: the machine, then one table row per record, the chart, then the runs.
 */
function markdownReport(results) {
  const cell = (text) => String(text).replace(/\|/g, '\\|').replace(/\n/g, ' ');
  const withUnit = (x, unit) => (x === null || x === undefined ? '–' : `${figure(x)}${unit ? ` ${unit}` : ''}`);
  const lines = [
    `# hb-ts benchmarks: ${results.slug}`,
    '',
    results.machine,
    '',
    `Written ${results.date} by \`npm run bench\` (bench/run.js), node ${results.node}` +
      (results.commit ? `, commit ${results.commit}` : '') +
      '. Ratio: how many times better hb-ts does than the baseline (> 1: faster, or smaller where a smaller figure is better); ' +
      'target: the least ratio wanted.',
    '',
    '| bench | workload | hb-ts | baseline | ratio | target | target met |',
    '|---|---|---:|---|---:|---:|---|',
  ];
  for (const r of results.records) {
    const baseline = [r.baseline !== null && r.baseline !== undefined ? withUnit(r.baseline, r.unit) : '', r.baselineName ? `(${r.baselineName})` : '']
      .filter(Boolean)
      .join(' ');
    lines.push(
      `| ${cell(r.bench)} | ${cell(r.workload)} | ${cell(withUnit(r.value, r.unit))} | ${cell(baseline || '–')} | ` +
        `${ratioText(r.ratio)} | ${r.target === null || r.target === undefined ? '' : `≥ ${targetText(r.target)}x`} | ${metText(r)} |`,
    );
  }
  if (results.records.length === 0) lines.push('| | no bench recorded a figure | | | | | |');
  lines.push('', `![hb-ts against each baseline](${results.slug}.svg)`, '');
  if (results.benches && results.benches.length > 0) {
    lines.push('| bench | run | commit | result |', '|---|---|---|---|');
    for (const b of results.benches) {
      lines.push(`| ${cell(b.bench)} | ${b.date} | ${b.commit || '–'} | ${b.result === 'ok' ? 'ok' : `failed (${b.result})`} |`);
    }
    lines.push('');
  }
  return lines.join('\n');
}

const xml = (text) =>
  String(text).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]);

/**
 * A horizontal bar per record with a ratio, on a log scale (ratios run from 0.01 to
 * 100s: a linear axis would flatten all but the largest): each bar goes from the line at
 * 1.0 to its ratio, green where its target is met, red where not, blue without one; a
 * black tick marks the target.
 */
function svgChart(results) {
  const rows = results.records.filter((r) => typeof r.ratio === 'number');
  // Cut from the middle: a label starts with what was measured and ends with what against.
  const maxLabel = 88;
  const labels = rows.map((r) => {
    const full = `${r.bench}: ${r.workload}`;
    const keep = (maxLabel - 1) / 2;
    return full.length > maxLabel ? `${full.slice(0, Math.ceil(keep))}…${full.slice(-Math.floor(keep))}` : full;
  });
  const charWidth = 7.2; // monospace at 12px
  const labelWidth = Math.ceil(Math.max(20, ...labels.map((l) => l.length)) * charWidth) + 16;
  const plotWidth = 520;
  const valueWidth = 170;
  const width = labelWidth + plotWidth + valueWidth;
  const rowHeight = 22;
  const top = 64;
  const height = top + Math.max(1, rows.length) * rowHeight + 36;
  const x0 = labelWidth;
  const x1 = labelWidth + plotWidth;

  const positive = [1, ...rows.map((r) => r.ratio), ...rows.map((r) => r.target)].filter((x) => typeof x === 'number' && x > 0);
  const lo = Math.min(...positive) / 1.3;
  const hi = Math.max(...positive) * 1.3;
  const x = (r) => x0 + ((Math.log(Math.max(r, lo)) - Math.log(lo)) / (Math.log(hi) - Math.log(lo))) * plotWidth;

  let ticks = [];
  for (let k = Math.floor(Math.log10(lo)); k <= Math.ceil(Math.log10(hi)); k++) {
    for (const m of [1, 2, 5]) ticks.push(m * 10 ** k);
  }
  ticks = ticks.filter((t) => t >= lo && t <= hi);
  if (ticks.length > 12) ticks = ticks.filter((t) => Math.abs(Math.log10(t) - Math.round(Math.log10(t))) < 1e-9);
  const tickText = (t) => (t >= 1 ? String(Math.round(t)) : String(Number(t.toPrecision(1))));

  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="ui-monospace, Menlo, Consolas, monospace" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="8" y="20" font-size="14" font-weight="bold">${xml(`hb-ts against each baseline: ${results.slug}`)}</text>`,
    `<text x="8" y="38" fill="#555555">${xml('ratio, log scale; > 1: hb-ts ahead. Green: target met, red: not met, blue: no target; black tick: target')}</text>`,
    `<text x="8" y="54" fill="#555555" font-size="10">${xml(results.machine)}</text>`,
  ];
  rows.forEach((r, i) => {
    if (i % 2 === 1) out.push(`<rect x="0" y="${top + i * rowHeight}" width="${width}" height="${rowHeight}" fill="#f4f4f4"/>`);
  });
  for (const t of ticks) {
    out.push(`<line x1="${x(t).toFixed(1)}" y1="${top - 4}" x2="${x(t).toFixed(1)}" y2="${height - 30}" stroke="#e4e4e4"/>`);
    out.push(`<text x="${x(t).toFixed(1)}" y="${height - 14}" text-anchor="middle" fill="#555555">${tickText(t)}x</text>`);
  }
  rows.forEach((r, i) => {
    const y = top + i * rowHeight;
    const color = r.met === true ? '#2e7d32' : r.met === false ? '#c62828' : '#1f77b4';
    const from = Math.min(x(1), x(r.ratio));
    const barWidth = Math.max(1, Math.abs(x(r.ratio) - x(1)));
    const verdict = r.met === null || r.met === undefined ? '' : ` ≥${targetText(r.target)} ${r.met ? 'met' : 'NOT MET'}`;
    out.push(`<g><title>${xml(`${r.bench}: ${r.workload}: ${ratioText(r.ratio)}${verdict}`)}</title>`);
    out.push(`<text x="${x0 - 8}" y="${y + 15}" text-anchor="end">${xml(labels[i])}</text>`);
    out.push(`<rect x="${from.toFixed(1)}" y="${y + 4}" width="${barWidth.toFixed(1)}" height="${rowHeight - 8}" fill="${color}"/>`);
    if (typeof r.target === 'number' && r.target > 0) {
      out.push(`<line x1="${x(r.target).toFixed(1)}" y1="${y + 1}" x2="${x(r.target).toFixed(1)}" y2="${y + rowHeight - 1}" stroke="#000000" stroke-width="2.5"/>`);
    }
    out.push(`<text x="${x1 + 8}" y="${y + 15}">${xml(`${ratioText(r.ratio)}${verdict}`)}</text>`);
    out.push('</g>');
  });
  if (rows.length === 0) out.push(`<text x="${x0}" y="${top + 15}" fill="#555555">no bench recorded a ratio</text>`);
  out.push(`<line x1="${x(1).toFixed(1)}" y1="${top - 4}" x2="${x(1).toFixed(1)}" y2="${height - 30}" stroke="#333333" stroke-width="1.5"/>`);
  out.push('</svg>', '');
  return out.join('\n');
}

/** Writes <dir>/<slug>.json, .md and .svg; their paths. */
function writeResults(dir, results) {
  fs.mkdirSync(dir, { recursive: true });
  const base = path.join(dir, results.slug);
  const files = { json: `${base}.json`, md: `${base}.md`, svg: `${base}.svg` };
  fs.writeFileSync(files.json, JSON.stringify(results, null, 2) + '\n');
  fs.writeFileSync(files.md, markdownReport(results));
  fs.writeFileSync(files.svg, svgChart(results));
  return files;
}

module.exports = { record, readRecords, markdownReport, svgChart, writeResults };
