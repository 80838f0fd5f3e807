// The hb-ts command: `train` (DLRM on defaults or a config file), `launch` (a job's
// workers on this node), `info` (backend report), `serve` (an export behind TF Serving's
// REST API).
import { packageVersion } from '../package_root';
import { Command, InvalidArgumentError } from 'commander';
import * as os from 'os';
import * as path from 'path';
import { backend } from '../backend';
import { native } from '../native';
import * as data from '../data';
import { Estimator } from '../estimator/estimator';
import { RunConfig } from '../estimator/run_config';
import { EvalSpec, TrainHook, TrainSpec } from '../estimator/specs';
import { trainAndEvaluate } from '../estimator/train_and_evaluate';
import { launch, LaunchOptions } from '../distribute/launch';
import { context, isInitialized, shutdown } from '../distribute/process_group';
import { stats } from '../distribute/collectives';
import { dlrmModelFn } from '../models/dlrm';
import * as fc from '../feature_column';
import type { ModelFn } from '../estimator/estimator';
import type { Batch, InputFn } from '../estimator/input';
import { formatMemoryPlan } from '../estimator/memory_plan';
import { memoryPlan } from '../estimator/plan_memory';
import { startServer } from '../serving/http_server';
import { loadModel } from '../serving/load_model';
import { readTrainConfig, settingsHelp, TrainConfig } from './train_config';
import { defaultFeatures, filesInput, filesOf, formatOf, modelFnOf, modelInputsOf, optimizerOf } from './train_on_files';

const MODEL_TITLES: Record<TrainConfig['model'], string> = { dlrm: 'DLRM', wideAndDeep: 'Wide & Deep', deepFM: 'DeepFM', dcn: 'DCN-v2' };

interface PreparedRun {
  config: TrainConfig;
  estimator: Estimator;
  modelFn: ModelFn;
  trainInput: InputFn;
  evalInput?: InputFn;
  maxSteps?: number;
  evalSteps?: number;
  what: string;
}

/** The config's model, input and Estimator (nothing read, built or allocated yet). */
function prepareRun(configFile: string | undefined, command: string): PreparedRun {
  const config: TrainConfig = readTrainConfig(configFile, command);
  const job = context();
  const W = job.worldSize;
  const where = `hb-ts ${command}: ${configFile ?? 'defaults'}`;
  let run: Omit<PreparedRun, 'config' | 'estimator'>;
  if (config.trainFiles) {
    const trainFiles = filesOf(config.trainFiles, config.baseDir, 'trainFiles', where);
    const evalFiles = config.evalFiles ? filesOf(config.evalFiles, config.baseDir, 'evalFiles', where) : undefined;
    const format = formatOf(config, trainFiles);
    const features = config.features ?? defaultFeatures(format, where);
    const inputs = modelInputsOf(features, config, where);
    let modelFn: ModelFn;
    try {
      modelFn = modelFnOf(config, inputs);
    } catch (error) {
      throw new Error(`${where}: ${(error as Error).message}`);
    }
    run = {
      modelFn,
      trainInput: filesInput(trainFiles, format, features, config, config.epochs),
      evalInput: evalFiles ? filesInput(evalFiles, format, features, config, 1) : undefined,
      maxSteps: config.maxSteps,
      evalSteps: config.evalSteps,
      what: `${MODEL_TITLES[config.model]} on ${trainFiles.length} ${format} file${trainFiles.length > 1 ? 's' : ''} (${inputs.numeric.length} numeric, ${inputs.categorical.length} categorical features), ${config.epochs} epoch${config.epochs > 1 ? 's' : ''}`,
    };
  } else {
    const tables = config.tables.map((t) => ({ ...t, hotness: t.hotness }));
    // One planted model (one seed) for training and evaluation; its rows split in two
    // halves so evaluation is on held-out rows, each half split between the ranks.
    const synthetic = (half: number, blockRows?: number) =>
      data.Dataset.synthetic({ numDense: config.numDense, tables, numSamples: 2 * config.trainSamples, seed: config.seed, partitionCount: 2 * W, partitionIndex: half * W + job.rank, blockRows })
        .batch(config.batchSize)
        .prefetch(2);
    // Every evaluation reads the same first batches of the held-out half: one dataset for
    // all of them keeps its reader threads from one to the next, and blocks of one batch
    // leave little made and unread when an evaluation stops after its steps.
    const evalData = synthetic(1, config.batchSize);
    const modelFn =
      config.model === 'dlrm'
        ? dlrmModelFn({
            denseFeatures: Array.from({ length: config.numDense }, (_, i) => `I${i + 1}`),
            tables: config.tables.map((t) => ({ name: t.name, numBuckets: t.vocabularySize })),
            embeddingDim: config.embeddingDim,
            bottomMlp: config.bottomMlp,
            topMlp: config.topMlp,
            makeOptimizer: optimizerOf(config.optimizer, config.learningRate),
            seed: config.seed,
          })
        : modelFnOf(config, {
            numeric: Array.from({ length: config.numDense }, (_, i) => fc.numericColumn(`I${i + 1}`)),
            categorical: config.tables.map((t) => ({ column: fc.categoricalColumnWithIdentity(t.name, t.vocabularySize), embedding: { combiner: 'sum' } })),
            embeddingDim: config.embeddingDim,
            numericTransform: 'log1p',
          });
    run = {
      modelFn,
      trainInput: () => synthetic(0),
      evalInput: () => evalData,
      maxSteps: config.maxSteps ?? Math.max(1, Math.floor(config.trainSamples / (config.batchSize * W))),
      evalSteps: config.evalSteps ?? Math.max(1, Math.ceil(config.evalSamples / (config.batchSize * W))),
      what:
        `${MODEL_TITLES[config.model]}, ${config.tables.length} tables x ${config.embeddingDim}, ` +
        (config.model === 'dlrm' ? `bottom [${config.bottomMlp}], top [${config.topMlp}]` : config.model === 'dcn' ? `${config.crossLayers} cross layers, [${config.hiddenUnits}]` : `[${config.hiddenUnits}]`) +
        ' on generated Criteo-like data',
    };
  }
  const estimator = new Estimator({ modelFn: run.modelFn, modelDir: config.modelDir, config: new RunConfig({ logStepCountSteps: 50, saveCheckpointsSteps: config.modelDir ? 500 : undefined, tfRandomSeed: config.seed }) });
  return { ...run, config, estimator };
}

/** The first batch of the run's training input (its readers stopped after it). */
async function firstBatchOf(run: PreparedRun, command: string, configFile: string | undefined): Promise<Batch> {
  const input = await run.trainInput();
  const iterator = Symbol.asyncIterator in input ? (input as AsyncIterable<Batch>)[Symbol.asyncIterator]() : (input as Iterable<Batch>)[Symbol.iterator]();
  const first = await iterator.next();
  await iterator.return?.(undefined);
  if (first.done) throw new Error(`hb-ts ${command}: ${configFile ?? 'defaults'}: the training input gives no batch`);
  return first.value;
}

/**
 * The trained model exported to the config's exportDir (a new version for hb-ts serve),
 * shaped by the training input's first batch. In one process: after a job, the launcher
 * exports the job's checkpoint, read whole.
 */
async function exportTrained(run: PreparedRun, configFile: string | undefined): Promise<void> {
  const exportDir = run.config.exportDir as string;
  const dir = await run.estimator.exportSavedModel(exportDir, { sampleBatch: await firstBatchOf(run, 'train', configFile) });
  console.log(`exported ${dir} (serve it: npx hb-ts serve ${exportDir})`);
}

/** `hb-ts plan config.json`: the memory plan of the run the config describes, for its first batch. */
async function plan(configFile: string | undefined): Promise<void> {
  const run = prepareRun(configFile, 'plan');
  const memory = await memoryPlan(run.estimator, await firstBatchOf(run, 'plan', configFile));
  // Rank 0 prints the plan; every other rank what does not fit on it.
  if (context().rank === 0) console.log(formatMemoryPlan(memory));
  else for (const problem of memory.problems) console.log(`does not fit on rank ${context().rank}: ${problem}`);
  if (memory.problems.length > 0) process.exitCode = 2;
  if (context().worldSize > 1) await shutdown();
}

async function train(configFile: string | undefined): Promise<void> {
  const run = prepareRun(configFile, 'train');
  const { config, estimator } = run;
  // Under hb-ts launch: one rank of a job (batchSize is each rank's; rank 0 reports).
  const job = context();
  const W = job.worldSize;
  const say = job.rank === 0 ? (line: string) => console.log(line) : () => undefined;
  const onWhat = W > 1 ? `${W} processes (batch ${config.batchSize} each) on ${estimator.device}` : estimator.device;
  const steps = run.maxSteps !== undefined ? `${run.maxSteps} steps` : 'until the input ends';
  say(`hb-ts train: ${run.what}, batch ${config.batchSize}, ${steps} on ${onWhat}, ${backend().threads} threads (${os.cpus()[0]?.model ?? 'cpu'})`);
  // Steps restored from modelDir were trained by an earlier run: only this run's are
  // counted in samples/s (the step restored is known once its files were read and verified).
  let trained = 0;
  const counting: TrainHook = { afterRun: () => void trained++ };
  const started = Date.now();
  let outcome: string;
  if (run.evalInput) {
    const result = await trainAndEvaluate(
      estimator,
      new TrainSpec({ inputFn: run.trainInput, maxSteps: run.maxSteps, hooks: [counting] }),
      new EvalSpec({ inputFn: run.evalInput, steps: run.evalSteps }),
      { evalEveryNIter: config.evalEveryNIter },
    );
    // The evaluation is over every rank's rows: one loss and AUC for the job.
    outcome = `eval loss ${result.loss.toFixed(5)}, eval AUC ${result.auc.toFixed(4)}`;
  } else {
    await estimator.train(run.trainInput, { maxSteps: run.maxSteps, hooks: [counting] });
    outcome = 'no evalFiles, no evaluation';
  }
  const seconds = (Date.now() - started) / 1000;
  const restoredStep = estimator.globalStep - trained;
  const resumed = restoredStep > 0 ? ` (resumed at step ${restoredStep})` : '';
  // How the ranks exchanged: shared memory on one machine, else Gloo's TCP (or NCCL).
  const transport = W > 1 && isInitialized() ? { shm: 'shared memory', tcp: "Gloo's TCP", nccl: 'NCCL', local: 'no exchange' }[stats().transport] : undefined;
  const over = W > 1 ? ` over ${W} processes${transport ? ` (exchanging through ${transport})` : ''}` : '';
  say(`done: ${outcome}, ${trained} steps${resumed} in ${seconds.toFixed(1)} s${run.evalInput ? ' (with evaluations)' : ''}, ${Math.round((trained * config.batchSize * W) / seconds)} samples/s${over}`);
  // A job's ranks leave the export to the launcher, which reads their checkpoint whole.
  if (config.exportDir && W === 1) await exportTrained(run, configFile);
  if (W > 1) await shutdown();
}

function integerOption(name: string) {
  return (value: string): number => {
    if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`${name} must be a whole number, got '${value}'`);
    return Number(value);
  };
}

interface ServeFlags {
  port: number;
  host: string;
  modelName?: string;
  pollIntervalMs: number;
  maxBatch: number;
  maxInFlight: number;
  requestTimeoutMs: number;
  device?: string;
}

/**
 * `hb-ts serve exportDir`: the export's newest version behind TF Serving's REST API until
 * SIGTERM / SIGINT, which close it gracefully (every request received is answered).
 * stdout has one line per version served; loads and failures go to stderr.
 */
async function serve(exportDir: string, flags: ServeFlags): Promise<void> {
  let url: string | undefined;
  let name = flags.modelName;
  const announce = (version: number) => console.log(`serving ${name} version ${version} at ${url}`);
  const server = await startServer({
    exportDir,
    modelName: flags.modelName,
    host: flags.host,
    port: flags.port,
    pollIntervalMs: flags.pollIntervalMs,
    maxBatch: flags.maxBatch,
    maxInFlight: flags.maxInFlight,
    requestTimeoutMs: flags.requestTimeoutMs,
    load: (dir) => loadModel(dir, { device: flags.device }),
    log: (line) => console.error(`hb-ts serve: ${line}`),
    // The first version is announced once the address is known (below); later ones as they swap in.
    onServing: (version) => {
      if (url !== undefined) announce(version);
    },
  });
  url = server.url;
  name = server.modelName;
  if (server.version !== undefined) announce(server.version);
  else console.error(`hb-ts serve: ${name} at ${url} has no version yet; waiting for one in ${path.resolve(exportDir)}`);
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    const stop = (received: NodeJS.Signals) => {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      resolve(received);
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
  // A second signal while closing ends the process at once (its default action).
  console.error(`hb-ts serve: ${signal}: answering the requests in flight, then exiting`);
  await server.close();
  process.exit(0);
}

interface LaunchFlags {
  nprocPerNode: number;
  nnodes?: number;
  nodeRank?: number;
  masterAddr?: string;
  masterPort?: number;
}

function withLaunchOptions(command: Command, nprocDefault?: number): Command {
  return command
    .option('--nproc-per-node <n>', 'workers to start on this node', integerOption('--nproc-per-node'), nprocDefault)
    .option('--nnodes <n>', 'nodes in the job', integerOption('--nnodes'))
    .option('--node-rank <r>', "this node's place among them (0 .. nnodes - 1)", integerOption('--node-rank'))
    .option('--master-addr <addr>', "rank 0's machine (default 127.0.0.1)")
    .option('--master-port <port>', "rank 0's store port (default: a free one on one node, 29500 on several)", integerOption('--master-port'));
}

// Runs the job and exits as the launcher should: 0, or the failed worker's code.
async function runLaunch(flags: LaunchFlags, script: string, args: string[]): Promise<void> {
  const options: LaunchOptions = { ...flags, script, args };
  const result = await launch(options);
  process.exitCode = result.exitCode;
}

/**
 * `hb-ts <command> [config] --nproc-per-node N`: a launcher of N workers running the same
 * command when asked for several and not one itself, else the command here.
 */
async function onEveryRank(command: string, config: string | undefined, flags: Partial<LaunchFlags>, run: (config: string | undefined) => Promise<void>): Promise<void> {
  if (flags.nprocPerNode !== undefined && process.env.RANK === undefined && (flags.nprocPerNode > 1 || (flags.nnodes ?? 1) > 1)) {
    // The export after a job is this process's, from the job's checkpoint: checked before the job starts.
    const exporting = command === 'train' ? prepareRun(config, command) : undefined;
    if (exporting?.config.exportDir && !exporting.config.modelDir) {
      throw new Error(`hb-ts train: ${config ?? 'defaults'}: exportDir under --nproc-per-node needs modelDir: the job's checkpoint is what is exported`);
    }
    await runLaunch(flags as LaunchFlags, path.resolve(__dirname, '..', '..', 'bin', 'hb-ts.js'), [command, ...(config ? [path.resolve(config)] : [])]);
    if (exporting?.config.exportDir && process.exitCode === 0 && (flags.nodeRank ?? 0) === 0) await exportTrained(exporting, config);
    return;
  }
  await run(config);
}

export async function main(argv: string[]): Promise<void> {
  const program = new Command();
  program
    .name('hb-ts')
    .description('Train recommendation models with huge sparse embedding tables.')
    .version(packageVersion())
    .enablePositionalOptions();
  withLaunchOptions(
    program
      .command('train')
      .argument('[config]', 'a JSON file of settings (listed below); default: DLRM on generated data')
      .description('train a model and print loss, AUC and throughput (--nproc-per-node N: on N local processes)')
      .addHelpText('after', `\nSettings of the config file (a JSON object; every one optional):\n${settingsHelp()}`),
  ).action((config: string | undefined, flags: Partial<LaunchFlags>) => onEveryRank('train', config, flags, train));
  withLaunchOptions(
    program
      .command('plan')
      .argument('[config]', 'the JSON file of settings `hb-ts train` takes; default: DLRM on generated data')
      .description("the memory the training run would need, per device and per table (parameters, slots, hash, exchange), beside each device's free memory; exits 2 when it does not fit"),
  ).action((config: string | undefined, flags: Partial<LaunchFlags>) => onEveryRank('plan', config, flags, plan));
  program
    .command('info')
    .description('what was built and what this machine has')
    .action(() => {
      // Never fails: a device that cannot be used (HB_DEVICE=cuda without a GPU) is part
      // of the report, with what the rest of the addon found.
      let report: Record<string, unknown>;
      try {
        report = { ...backend() };
      } catch (error) {
        report = { device: null, deviceError: (error as Error).message, ...native.backendReport() };
      }
      console.log(JSON.stringify(report, null, 2));
    });
  program
    .command('serve')
    .argument('<exportDir>', 'the directory exportSavedModel writes versions into (<exportDir>/<version>/)')
    .description("serve the export's newest version with TensorFlow Serving's REST API (/v1/models/<name>:predict, status, metadata) and /metrics; newer versions are swapped in as they appear")
    .option('--port <port>', 'the port to listen on (0: any free one)', integerOption('--port'), 8501)
    .option('--host <host>', "the address to listen on ('0.0.0.0' for other machines)", '127.0.0.1')
    .option('--model-name <name>', 'the name in /v1/models/<name> (default: the basename of exportDir)')
    .option('--poll-interval-ms <ms>', 'how often exportDir is looked at for a newer version', integerOption('--poll-interval-ms'), 1000)
    .option('--max-batch <n>', 'examples one predict request may hold at most', integerOption('--max-batch'), 4096)
    .option('--max-in-flight <n>', 'predict requests read or answered at once, at most (more get a 503)', integerOption('--max-in-flight'), 64)
    .option('--request-timeout-ms <ms>', 'a request not received whole in this long gets a 408 and its connection closed', integerOption('--request-timeout-ms'), 30_000)
    .option('--device <device>', "where the model runs: 'cpu', 'cuda', 'cuda:N' (default: the current device)")
    .action((exportDir: string, flags: ServeFlags) => serve(exportDir, flags));
  withLaunchOptions(
    program
      .command('launch')
      .description("start this node's workers of a job (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT set), each line prefixed with its rank")
      .argument('<script>', 'the JavaScript file each worker runs with node')
      .argument('[args...]', "the script's own arguments")
      .passThroughOptions(),
    1,
  ).action((script: string, args: string[], flags: LaunchFlags) => runLaunch(flags, script, args));
  await program.parseAsync(argv);
}
