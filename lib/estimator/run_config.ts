// tf.estimator.RunConfig, with how progress is shown.

import { DeviceSpec, resolveDevice } from '../backend';
import { checkOptionKeys } from '../option_keys';
import { shownValue } from '../shown_value';

export interface RunConfigInit {
  /** Save a checkpoint every N steps (takes precedence over saveCheckpointsSecs). */
  saveCheckpointsSteps?: number;
  /** Default 600, when saveCheckpointsSteps is not set. */
  saveCheckpointsSecs?: number;
  /**
   * Also save a delta checkpoint every N steps between the full ones: the dynamic tables'
   * rows changed since the last full checkpoint (and the ids removed since), every other
   * variable whole. A restore reads the last full checkpoint, then the newest delta.
   * Default: none.
   */
  saveDeltaSteps?: number;
  /** Default 5; 0 keeps every checkpoint. A delta's base is kept while the delta is. */
  keepCheckpointMax?: number;
  /** Default 100: loss and throughput logged every N steps. */
  logStepCountSteps?: number;
  /** Where log lines go; default console.log. */
  log?: (line: string) => void;
  /** A progress bar on stderr; default: when stderr is a terminal. */
  progressBar?: boolean;
  /**
   * Where the model trains: 'cpu', 'cuda' or 'cuda:N'. Default: the current device
   * (HB_DEVICE, else CUDA when usable, else the CPU).
   */
  device?: DeviceSpec;
  /**
   * TF's graph-level seed: the model's initializers made without a seed draw from seeds
   * derived from it and each variable's name, so runs with the same seed, data order and
   * threads start alike and train to bit-identical losses and checkpoints. Default: none
   * (each run starts from other random values).
   */
  tfRandomSeed?: number;
}

function nonNegativeInteger(value: unknown, name: string): number {
  if (typeof value !== 'number') throw new TypeError(`RunConfig: ${name} must be an integer >= 0, got ${shownValue(value)}`);
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`RunConfig: ${name} must be an integer >= 0, got ${shownValue(value)}`);
  return value;
}

const RUN_CONFIG_KEYS = ['saveCheckpointsSteps', 'saveCheckpointsSecs', 'saveDeltaSteps', 'keepCheckpointMax', 'logStepCountSteps', 'log', 'progressBar', 'device', 'tfRandomSeed'] satisfies ReadonlyArray<keyof RunConfigInit>;

export class RunConfig {
  readonly saveCheckpointsSteps?: number;
  readonly saveCheckpointsSecs?: number;
  readonly saveDeltaSteps?: number;
  readonly keepCheckpointMax: number;
  readonly logStepCountSteps: number;
  readonly log: (line: string) => void;
  readonly progressBar: boolean;
  readonly device?: DeviceSpec;
  readonly tfRandomSeed?: number;

  constructor(init: RunConfigInit = {}) {
    checkOptionKeys(init, RUN_CONFIG_KEYS, 'RunConfig');
    if (init.saveCheckpointsSteps !== undefined && init.saveCheckpointsSecs !== undefined) {
      throw new Error('RunConfig: set saveCheckpointsSteps or saveCheckpointsSecs, not both (as TF)');
    }
    if (init.saveCheckpointsSteps !== undefined) this.saveCheckpointsSteps = nonNegativeInteger(init.saveCheckpointsSteps, 'saveCheckpointsSteps');
    else this.saveCheckpointsSecs = init.saveCheckpointsSecs === undefined ? 600 : nonNegativeInteger(init.saveCheckpointsSecs, 'saveCheckpointsSecs');
    if (init.saveDeltaSteps !== undefined) {
      this.saveDeltaSteps = nonNegativeInteger(init.saveDeltaSteps, 'saveDeltaSteps');
      if (this.saveDeltaSteps === 0) throw new RangeError('RunConfig: saveDeltaSteps must be an integer >= 1, got 0 (leave it out for no deltas)');
    }
    if (init.tfRandomSeed !== undefined) this.tfRandomSeed = nonNegativeInteger(init.tfRandomSeed, 'tfRandomSeed');
    this.keepCheckpointMax = init.keepCheckpointMax === undefined ? 5 : nonNegativeInteger(init.keepCheckpointMax, 'keepCheckpointMax');
    this.logStepCountSteps = init.logStepCountSteps === undefined ? 100 : nonNegativeInteger(init.logStepCountSteps, 'logStepCountSteps');
    if (init.log !== undefined && typeof init.log !== 'function') throw new TypeError('RunConfig: log must be a function');
    this.log = init.log ?? ((line: string) => console.log(line));
    this.progressBar = init.progressBar ?? Boolean(process.stderr.isTTY);
    if (init.device !== undefined) this.device = resolveDevice(init.device, 'RunConfig: device') as DeviceSpec;
  }
}
