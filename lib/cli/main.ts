// The hb-ts command: `train` (DLRM on defaults or a config file), `info` (backend report).
import { Command } from 'commander';
import * as os from 'os';
import { backend } from '../backend';
import * as data from '../data';
import { Estimator } from '../estimator/estimator';
import { RunConfig } from '../estimator/run_config';
import { EvalSpec, TrainSpec } from '../estimator/specs';
import { trainAndEvaluate } from '../estimator/train_and_evaluate';
import { dlrmModelFn } from '../models/dlrm';
import { AdagradOptimizer, AdamOptimizer, GradientDescentOptimizer } from '../train/optimizers';
import { readTrainConfig, TrainConfig } from './train_config';

async function train(configFile: string | undefined): Promise<void> {
  const config: TrainConfig = readTrainConfig(configFile);
  const tables = config.tables.map((t) => ({ ...t, hotness: t.hotness }));
  // One planted model (one seed) for training and evaluation; its rows split in two
  // partitions so evaluation is on held-out rows.
  const synthetic = (partitionIndex: number) => () =>
    data.Dataset.synthetic({ numDense: config.numDense, tables, numSamples: 2 * config.trainSamples, seed: config.seed, partitionCount: 2, partitionIndex })
      .batch(config.batchSize)
      .prefetch(2);
  const makeOptimizer = () =>
    config.optimizer === 'adam'
      ? new AdamOptimizer({ learningRate: config.learningRate })
      : config.optimizer === 'sgd'
        ? new GradientDescentOptimizer({ learningRate: config.learningRate })
        : new AdagradOptimizer({ learningRate: config.learningRate });
  const modelFn = dlrmModelFn({
    denseFeatures: Array.from({ length: config.numDense }, (_, i) => `I${i + 1}`),
    tables: config.tables.map((t) => ({ name: t.name, numBuckets: t.vocabularySize })),
    embeddingDim: config.embeddingDim,
    bottomMlp: config.bottomMlp,
    topMlp: config.topMlp,
    makeOptimizer,
    seed: config.seed,
  });
  const estimator = new Estimator({ modelFn, modelDir: config.modelDir, config: new RunConfig({ logStepCountSteps: 50, saveCheckpointsSteps: config.modelDir ? 500 : undefined }) });
  const maxSteps = config.maxSteps ?? Math.floor(config.trainSamples / config.batchSize);
  console.log(`hb-ts train: DLRM, ${config.tables.length} tables x ${config.embeddingDim}, bottom [${config.bottomMlp}], top [${config.topMlp}], batch ${config.batchSize}, ${maxSteps} steps on ${estimator.device}, ${backend().threads} threads (${os.cpus()[0]?.model ?? 'cpu'})`);
  const started = Date.now();
  const result = await trainAndEvaluate(
    estimator,
    new TrainSpec({ inputFn: synthetic(0), maxSteps }),
    new EvalSpec({ inputFn: synthetic(1), steps: Math.max(1, Math.ceil(config.evalSamples / config.batchSize)) }),
    { evalEveryNIter: config.evalEveryNIter },
  );
  const seconds = (Date.now() - started) / 1000;
  const trainedSamples = estimator.globalStep * config.batchSize;
  console.log(`done: eval loss ${result.loss.toFixed(5)}, eval AUC ${result.auc.toFixed(4)}, ${estimator.globalStep} steps in ${seconds.toFixed(1)} s (with evaluations), ${Math.round(trainedSamples / seconds)} samples/s`);
}

export async function main(argv: string[]): Promise<void> {
  const program = new Command();
  program.name('hb-ts').description('Train recommendation models with huge sparse embedding tables.');
  program
    .command('train')
    .argument('[config]', 'a JSON file of settings (see lib/cli/train_config.ts); default: DLRM on generated data')
    .description('train a model and print loss, AUC and throughput')
    .action((config?: string) => train(config));
  program
    .command('info')
    .description('what was built and what this machine has')
    .action(() => console.log(JSON.stringify(backend(), null, 2)));
  program
    .command('launch')
    .description('start N local workers (multi-process training is not built yet)')
    .allowUnknownOption()
    .action(() => {
      throw new Error('hb-ts launch: distributed training is not built yet');
    });
  await program.parseAsync(argv);
}
