// A pass over a dataset that is left half-read must not keep the process alive: the
// reader threads hold the event loop only while something waits for them, and end when
// the iterator ends (return(), a loop's break or exception) or is collected.
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as arrow from 'apache-arrow';
import * as parquet from 'parquet-wasm/node';

const dist = JSON.stringify(path.resolve(__dirname, '..', 'dist', 'index.js'));
const tsv = JSON.stringify(path.resolve(__dirname, 'fixtures', 'criteo_kaggle_sample.tsv'));
let dir: string;
let parquetFile: string;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-data-abandoned-'));
  const table = new arrow.Table({ x: arrow.vectorFromArray(Int32Array.from({ length: 500 }, (_, i) => i)), label: arrow.vectorFromArray(Float32Array.from({ length: 500 }, (_, i) => i % 2)) });
  const properties = new parquet.WriterPropertiesBuilder().setMaxRowGroupSize(50).build();
  parquetFile = path.join(dir, 'rows.parquet');
  fs.writeFileSync(parquetFile, parquet.writeParquet(parquet.Table.fromIPCStream(arrow.tableToIPC(table, 'stream')), properties));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const readers = () => ({
  tsv: `hb.data.Dataset.fromCriteoTsv(${tsv}).batch(2)`,
  parquet: `hb.data.Dataset.fromParquet(${JSON.stringify(parquetFile)}, { labelField: 'label' }).batch(7)`,
});

const ways: Record<string, string> = {
  'a loop that breaks': 'for await (const batch of ds) { break; }',
  'an exception in the loop body': "try { for await (const batch of ds) throw new Error('boom'); } catch {}",
  'an iterator dropped after next(), without return()': 'const it = ds[Symbol.asyncIterator](); await it.next();',
  'an iterator dropped and collected': 'let it = ds[Symbol.asyncIterator](); await it.next(); it = null; global.gc(); await new Promise((r) => setTimeout(r, 50)); global.gc();',
};

for (const [reader, make] of Object.entries({ tsv: 'tsv', parquet: 'parquet' })) {
  for (const [how, body] of Object.entries(ways)) {
    test(`${reader}: ${how}: the process exits by itself`, () => {
      const script = `const hb = require(${dist}); (async () => { const ds = ${readers()[make as 'tsv' | 'parquet']}; ${body} console.log('DONE'); })().catch((e) => { console.log('ERROR ' + e.message); process.exit(2); });`;
      const started = Date.now();
      const child = spawnSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8', timeout: 30_000 });
      expect(child.stdout).toContain('DONE');
      expect(child.signal).toBeNull(); // not killed by the timeout
      expect(child.status).toBe(0);
      expect(Date.now() - started).toBeLessThan(20_000);
    });
  }
}
