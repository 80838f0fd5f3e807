// The hb-ts command as a user runs it: info never fails, the version, a missing addon
// reported with its fix instead of a stack trace, and train on the user's files from a
// JSON config (the example config on the real Criteo rows), its help and its errors.
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as arrow from 'apache-arrow';
import * as parquet from 'parquet-wasm/node';
import { SETTINGS } from '../lib/cli/train_config';

const cli = path.resolve(__dirname, '..', 'bin', 'hb-ts.js');
const run = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env } });

describe('npx hb-ts', () => {
  test('info prints the backend report', () => {
    const r = run(['info']);
    expect(r.status).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(['cpu', 'cuda']).toContain(report.device);
    expect(report.gloo).toHaveProperty('available');
  });

  test('info with a device that cannot be used reports it instead of failing', () => {
    const r = run(['info'], { HB_DEVICE: 'cuda:99' });
    expect(r.status).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.device).toBeNull();
    expect(report.deviceError).toMatch(/^HB_DEVICE=cuda:99: /);
    expect(report.cuda).toHaveProperty('compiled');
  });

  test('an addon that does not load is one line naming it, no stack trace', () => {
    const r = run(['info'], { HB_ADDON: '/nonexistent/hb.node' });
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toBe("hb-ts: HB_ADDON=/nonexistent/hb.node does not load (Cannot find module '/nonexistent/hb.node'); unset HB_ADDON to use the package's own build");
  });

  test('--version prints the package version, with or without a working addon', () => {
    for (const env of [{}, { HB_ADDON: '/nonexistent/hb.node' }]) {
      const r = run(['--version'], env);
      expect(r.status).toBe(0);
      expect(r.stdout.trim()).toBe(require('../package.json').version);
    }
  });
});

describe('npx hb-ts train on files', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-cli-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const example = path.resolve(__dirname, '..', 'examples', 'criteo_tsv.json');
  const writeConfig = (name: string, config: Record<string, unknown>) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, JSON.stringify(config));
    return file;
  };
  const fixture = path.resolve(__dirname, 'fixtures', 'criteo_kaggle_sample.tsv');

  test('--help lists every setting and points to no source file', () => {
    const r = run(['train', '--help']);
    expect(r.status).toBe(0);
    for (const { key } of SETTINGS) expect(r.stdout).toMatch(new RegExp(`^  ${key} `, 'm'));
    expect(r.stdout).not.toMatch(/lib\/|\.ts\b/);
  });

  test('the example config trains DeepFM on the Criteo sample and learns it; a rerun with its modelDir trains nothing more', () => {
    const r = run(['train', example]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/hb-ts train: DeepFM on 1 criteo-tsv file \(5 numeric, 6 categorical features\), 20 epochs/);
    const auc = Number(/eval AUC ([0-9.]+)/.exec(r.stdout)?.[1]);
    expect(auc).toBeGreaterThan(0.8);
    // Every model name builds and trains from the same files, resumable from modelDir.
    for (const model of ['dlrm', 'wideAndDeep', 'dcn']) {
      const config = writeConfig(`${model}.json`, {
        model,
        trainFiles: fixture,
        evalFiles: [fixture],
        batchSize: 25,
        embeddingDim: 8,
        bottomMlp: [16, 8],
        hiddenUnits: [16],
        modelDir: `model_${model}`,
        optimizer: 'adam',
        epochs: 3,
        maxSteps: 10,
      });
      const first = run(['train', config]);
      expect(first.stderr).toBe('');
      expect(first.stdout).toMatch(/done: eval loss [0-9.]+, eval AUC [0-9.]+, 10 steps/);
      // maxSteps counts from the restored step: the finished run trains no more.
      const again = run(['train', config]);
      expect(again.stdout).toMatch(/done: .*, 0 steps \(resumed at step 10\)/);
    }
  }, 120_000);

  test('Parquet files by glob, with identity, vocabulary and numeric features, under Wide & Deep', () => {
    // A planted signal: the label is 1 exactly when the user id is even.
    for (const part of [0, 1]) {
      const n = 400;
      const user = BigInt64Array.from({ length: n }, (_, i) => BigInt((i * 7 + part) % 50));
      const table = new arrow.Table({
        user: arrow.vectorFromArray(user),
        city: arrow.vectorFromArray(Array.from({ length: n }, (_, i) => ['lisbon', 'osaka', 'lima'][i % 3])),
        age: arrow.vectorFromArray(Float32Array.from({ length: n }, (_, i) => (i % 60) + 18)),
        clicked: arrow.vectorFromArray(Float32Array.from(user, (u) => (u % 2n === 0n ? 1 : 0))),
      });
      const bytes = parquet.writeParquet(parquet.Table.fromIPCStream(arrow.tableToIPC(table, 'stream')), new parquet.WriterPropertiesBuilder().setMaxRowGroupSize(100).build());
      fs.writeFileSync(path.join(dir, `part-${part}.parquet`), bytes);
    }
    const config = writeConfig('parquet.json', {
      model: 'wideAndDeep',
      trainFiles: 'part-*.parquet',
      evalFiles: 'part-1.parquet',
      labelField: 'clicked',
      features: {
        user: { type: 'identity', numBuckets: 50, embeddingDim: 4 },
        city: { type: 'vocabulary', vocabulary: ['lisbon', 'osaka'], numOovBuckets: 1 },
        age: { type: 'numeric', normalizer: 'log1p' },
      },
      embeddingDim: 4,
      hiddenUnits: [8],
      batchSize: 40,
      epochs: 8,
      evalEveryNIter: 1000,
      learningRate: 0.2,
      wideLearningRate: 0.5,
    });
    const r = run(['train', config]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/Wide & Deep on 2 parquet files \(1 numeric, 2 categorical features\), 8 epochs/);
    expect(Number(/eval AUC ([0-9.]+)/.exec(r.stdout)?.[1])).toBeGreaterThan(0.9);
  }, 60_000);

  test('bad configs name the file and the setting', () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ trainFile: fixture }, /unknown setting 'trainFile' \(did you mean 'trainFiles'\?\)/],
      [{ trainFiles: fixture, learningRate: '0.1' }, /learningRate must be a number > 0, got "0\.1" \(a string\)/],
      [{ trainFiles: 'nothing-*.tsv' }, /trainFiles: no file matches 'nothing-\*\.tsv'/],
      [{ trainFiles: fixture, model: 'xgboost' }, /model must be 'dlrm', 'wideAndDeep', 'deepFM', 'dcn', got "xgboost"/],
      [{ trainFiles: fixture, features: { C1: { type: 'hashed', hashBucketSize: 10, combinr: 'sum' } } }, /features\.C1: unknown option 'combinr' \(did you mean 'combiner'\?\)/],
      [{ trainFiles: fixture, model: 'dcn', features: { C1: { type: 'hashed', hashBucketSize: 10, embDevcie: 'cpu' } } }, /unknown embedding option 'embDevcie' \(did you mean 'embDevice'\?\)/],
      [{ trainFiles: fixture, model: 'dlrm', features: { C1: { type: 'hashed', hashBucketSize: 10 } } }, /dlrmModelFn: inputs\.numeric must name at least one dense column/],
      [{ trainFiles: fixture, features: { I1: { type: 'numeric' } } }, /features has no categorical feature/],
      [{ epochs: 2 }, /epochs is a setting for files, but trainFiles is not set/],
      [{ trainFiles: fixture, tables: [{ name: 'C1', vocabularySize: 10 }] }, /tables is a setting for generated data, but trainFiles is set/],
      [{ tables: [] }, /tables must be a non-empty array of \{ name, vocabularySize, hotness, alpha \}/],
      [{ tables: [{ name: 'C1', vocabularySize: '10' }] }, /tables\[0\]\.vocabularySize must be an integer >= 1, got "10" \(a string\)/],
      [{ trainFiles: fixture, features: { C1: { type: 'toString' } } }, /features\.C1\.type must be 'numeric', 'hashed', 'vocabulary' or 'identity', got "toString"/],
      [{ trainFiles: fixture, features: { I1: { type: 'numeric', normalizer: 'log' } } }, /features\.I1\.normalizer must be 'log1p' or 'none', got "log"/],
      // Found by the fuzzer: these ran the process out of memory (2^31 dense feature names; a unit of work per 8192 rows of 2^53).
      [{ numDense: 2 ** 31 }, /numDense must be an integer in \[0, 4096\], got 2147483648/],
      [{ trainSamples: 2 ** 53 - 1 }, /trainSamples must be an integer in \[1, 1125899906842624\], got 9007199254740991/],
    ];
    for (const [config, message] of cases) {
      const file = writeConfig('bad.json', config);
      const r = run(['train', file]);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`hb-ts train: ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
      expect(r.stderr).toMatch(message);
    }
    const missing = run(['train', path.join(dir, 'absent.json')]);
    expect(missing.stderr).toMatch(/cannot read .*absent\.json: no such file/);
  }, 60_000);
});
