// `hb-ts plan` on config files damaged in random ways: the repository's example configs
// and generated-data ones, a value inside each replaced, dropped or scaled (sizes of 0,
// 2^53, 1e308; strings for numbers; lists for objects), or the file cut or not JSON. The
// plan reads the config, builds the model and its input, reads the first batch and sizes
// the run's memory, allocating no table: either it answers or an Error names the
// setting, never a crash, a hang or an engine TypeError.
'use strict';
const fs = require('fs');
const path = require('path');
const { main } = require(path.join(__dirname, '..', '..', 'dist', 'cli', 'main.js'));

const examples = path.join(__dirname, '..', '..', 'examples');

// A config whose file paths are absolute, so it reads the same files from the scratch directory.
function exampleConfig(name) {
  const config = JSON.parse(fs.readFileSync(path.join(examples, name), 'utf8'));
  for (const key of ['trainFiles', 'evalFiles']) {
    if (typeof config[key] === 'string') config[key] = path.resolve(examples, config[key]);
  }
  delete config.modelDir;
  delete config.exportDir;
  return config;
}

function baseConfig(r) {
  return r.pick([
    () => exampleConfig('criteo_tsv.json'),
    () => exampleConfig('criteo_serving.json'),
    () => ({}),
    () => ({ model: r.pick(['dlrm', 'wideAndDeep', 'deepFM', 'dcn']), trainSamples: 512, evalSamples: 256, batchSize: 64, numDense: 3, tables: [{ name: 'C1', vocabularySize: 100, hotness: 2 }, { name: 'C2', vocabularySize: 50 }], embeddingDim: 4, bottomMlp: [8, 4], topMlp: [8], hiddenUnits: [8] }),
  ])();
}

module.exports = {
  name: 'cli_configs',
  async run(r, { attempt, scratch }) {
    let config = baseConfig(r);
    for (let i = 0, n = r.int(1, 3); i < n; i++) config = r.mutateJson(config) ?? config;
    if (r.chance(0.1)) config[r.pick(['batchsize', 'tables ', 'x'])] = 1;
    let text = JSON.stringify(config);
    if (r.chance(0.05)) text = text.slice(0, r.int(0, text.length));
    const file = path.join(scratch, `config-${r.int(0, 1e9)}.json`);
    fs.writeFileSync(file, text);
    // The plan prints its table: kept off the runner's stdout.
    const log = console.log;
    console.log = () => undefined;
    try {
      await attempt('hb-ts plan', () => main(['node', 'hb-ts', 'plan', file]));
    } finally {
      console.log = log;
      process.exitCode = undefined;
      fs.rmSync(file, { force: true });
    }
  },
};
