// Criteo TSV files with corrupted lines (fields missing or extra, huge and odd numbers,
// binary junk, a cut last line) read through the dataset pipeline.
'use strict';
const fs = require('fs');
const path = require('path');

const sample = fs.readFileSync(path.resolve(__dirname, '..', '..', 'test', 'fixtures', 'criteo_kaggle_sample.tsv'));

module.exports = {
  name: 'data_files',
  async run(r, { hb, attempt, scratch }) {
    const lines = sample.toString('latin1').split('\n').filter(Boolean).slice(0, r.int(0, 40));
    const broken = lines.map((line) => {
      if (!r.chance(0.2)) return line;
      const fields = line.split('\t');
      switch (r.int(0, 5)) {
        case 0: return fields.slice(0, r.int(0, fields.length - 1)).join('\t');
        case 1: return [...fields, 'extra'].join('\t');
        case 2: fields[r.int(1, 13)] = r.pick(['9'.repeat(400), '-5', '1e999', 'NaN', '0x10', ' 7', '']); return fields.join('\t');
        case 3: fields[r.int(14, fields.length - 1)] = r.pick(['', '\u0000\u00ff', 'zz'.repeat(500)]); return fields.join('\t');
        case 4: return Buffer.from(Array.from({ length: r.int(0, 300) }, () => r.int(0, 255))).toString('latin1');
        default: fields[0] = r.pick(['2', '-1', 'x', '']); return fields.join('\t');
      }
    });
    let text = broken.join('\n') + (r.chance(0.7) ? '\n' : '');
    if (r.chance(0.2)) text = text.slice(0, r.int(0, text.length));
    const file = path.join(scratch, `data-${r.int(0, 1e9)}.tsv`);
    fs.writeFileSync(file, Buffer.from(text, 'latin1'));
    try {
      await attempt('read', async () => {
        const ds = hb.data.Dataset.fromCriteoTsv(file, r.chance(0.3) ? { ignoreErrors: true } : {}).batch(r.pick([1, 7, 64]));
        let batches = 0;
        for await (const batch of ds) {
          if (++batches > 3 || r.chance(0.2)) break; // also abandon the iterator half-way
          if (!batch) throw new Error('empty batch');
        }
      });
    } finally {
      fs.rmSync(file, { force: true });
    }
  },
};
