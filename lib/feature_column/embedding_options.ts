// HybridBackend's embedding options: set per column, per hb.scope(), or by HB_EMB_*
// environment variables, in that order of precedence. A value may be a scalar or
// { [columnName]: value, '*': default }; a dict without the column's name and
// without '*' defers to the next level.
import { closestKey } from '../option_keys';

export interface EmbeddingOptionValues {
  embBackend: 'DEFAULT' | 'DYNAMIC';
  embNumGroups: number;
  /** '' = the worker's device; 'cpu' keeps the weights in host memory. */
  embDevice: string;
  embDtype: 'float32' | 'float16' | 'bfloat16';
  embWireDtype: 'float32' | 'float16' | 'bfloat16';
  embUnique: boolean;
  embShardUnique: boolean;
  embSegmentRank: number;
  embSharded: boolean;
  batchSize: number | undefined;
  /** DYNAMIC tables: training lookups of an id before it gets a row (DeepRec's CounterFilter). */
  embAdmitMinCount: number;
  /** DYNAMIC tables: a row unseen for more global steps than this is evicted; 0 never. */
  embEvictAfterSteps: number;
  /** DYNAMIC tables: at most this many rows per rank, least recently used evicted beyond; 0 no cap. */
  embMaxRows: number;
}

export type EmbeddingOptionName = keyof EmbeddingOptionValues;
export type PerColumn<T> = T | { readonly [column: string]: T };
export type EmbeddingOptions = { [K in EmbeddingOptionName]?: PerColumn<EmbeddingOptionValues[K]> };

interface OptionRule {
  env: string;
  fallback: unknown;
  /**
   * The JS type the option takes: a value of another type is a TypeError, one of this
   * type failing `check` an Error. 'dtype' options are TypeErrors either way, as TF's
   * dtype errors are.
   */
  type: 'string' | 'number' | 'boolean' | 'dtype';
  check(value: unknown): boolean;
  expected: string;
  parseEnv(text: string): unknown;
}

const dtypes = ['float32', 'float16', 'bfloat16'];
const isPositiveInt = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 1;
const isCount = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const parseBool = (text: string): unknown => {
  const t = text.trim().toLowerCase();
  if (['1', 'true', 'yes'].includes(t)) return true;
  if (['0', 'false', 'no'].includes(t)) return false;
  return text;
};
const parseNumber = (text: string): unknown => (text.trim() !== '' && Number.isFinite(Number(text)) ? Number(text) : text);
const asIs = (text: string): unknown => text;

// Checked by form only: a CUDA device this machine lacks is still a valid setting
// (the table is placed when it is made).
const isDeviceSpec = (v: unknown): boolean => typeof v === 'string' && /^(|cpu|cuda(:\d+)?)$/.test(v);

const rules: Record<EmbeddingOptionName, OptionRule> = {
  embBackend: { env: 'HB_EMB_BACKEND', fallback: 'DEFAULT', type: 'string', check: (v) => v === 'DEFAULT' || v === 'DYNAMIC', expected: "'DEFAULT' or 'DYNAMIC'", parseEnv: asIs },
  embNumGroups: { env: 'HB_EMB_NUM_GROUPS', fallback: 1, type: 'number', check: isPositiveInt, expected: 'an integer >= 1', parseEnv: parseNumber },
  embDevice: { env: 'HB_EMB_DEVICE', fallback: '', type: 'string', check: isDeviceSpec, expected: "'', 'cpu', 'cuda' or 'cuda:N'", parseEnv: asIs },
  embDtype: { env: 'HB_EMB_DTYPE', fallback: 'float32', type: 'dtype', check: (v) => dtypes.includes(v as string), expected: dtypes.join(', '), parseEnv: asIs },
  embWireDtype: { env: 'HB_EMB_WIRE_DTYPE', fallback: 'float32', type: 'dtype', check: (v) => dtypes.includes(v as string), expected: dtypes.join(', '), parseEnv: asIs },
  embUnique: { env: 'HB_EMB_UNIQUE', fallback: false, type: 'boolean', check: (v) => typeof v === 'boolean', expected: 'a boolean', parseEnv: parseBool },
  embShardUnique: { env: 'HB_EMB_SHARD_UNIQUE', fallback: false, type: 'boolean', check: (v) => typeof v === 'boolean', expected: 'a boolean', parseEnv: parseBool },
  embSegmentRank: {
    env: 'HB_EMB_SEGMENT_RANK',
    fallback: 0,
    type: 'number',
    check: (v) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0,
    expected: 'an integer >= 0',
    parseEnv: parseNumber,
  },
  embSharded: { env: 'HB_EMB_SHARDED', fallback: true, type: 'boolean', check: (v) => typeof v === 'boolean', expected: 'a boolean', parseEnv: parseBool },
  embAdmitMinCount: { env: 'HB_EMB_ADMIT_MIN_COUNT', fallback: 1, type: 'number', check: isPositiveInt, expected: 'an integer >= 1', parseEnv: parseNumber },
  embEvictAfterSteps: { env: 'HB_EMB_EVICT_AFTER_STEPS', fallback: 0, type: 'number', check: isCount, expected: 'an integer >= 0', parseEnv: parseNumber },
  embMaxRows: { env: 'HB_EMB_MAX_ROWS', fallback: 0, type: 'number', check: isCount, expected: 'an integer >= 0', parseEnv: parseNumber },
  batchSize: { env: 'HB_BATCH_SIZE', fallback: undefined, type: 'number', check: isPositiveInt, expected: 'an integer >= 1', parseEnv: parseNumber },
};

export const embeddingOptionNames = Object.keys(rules) as EmbeddingOptionName[];

function isPerColumnDict(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Checks every option of `options` (names and values); `where` names the source in errors.
 * `fromEnv`: the values were read from an environment variable, which is always a string,
 * so any fault in them is a wrong value (Error), never a wrong type.
 */
export function checkEmbeddingOptions(options: unknown, where: string, fromEnv = false, alsoTakes: readonly string[] = []): EmbeddingOptions {
  if (options === undefined) return {};
  if (!isPerColumnDict(options)) throw new TypeError(`${where}: embedding options must be an object`);
  for (const [name, value] of Object.entries(options)) {
    const rule = rules[name as EmbeddingOptionName];
    if (rule === undefined) {
      // The caller's own options (a column's combiner, initializer, ...) are listed too:
      // a misspelt `combinr` is as likely as a misspelt `embDevcie`.
      const known = [...alsoTakes, ...embeddingOptionNames];
      const meant = closestKey(name, known);
      throw new Error(`${where}: unknown embedding option '${name}'${meant ? ` (did you mean '${meant}'?)` : ''}; it takes ${known.map((k) => `'${k}'`).join(', ')}`);
    }
    if (value === undefined) continue;
    const entries = isPerColumnDict(value) ? Object.entries(value) : [['', value] as [string, unknown]];
    for (const [column, v] of entries) {
      if (!rule.check(v)) {
        const message = `${where}: ${name}${column ? `['${column}']` : ''} must be ${rule.expected}, got ${JSON.stringify(v)}`;
        if (!fromEnv && (rule.type === 'dtype' || typeof v !== rule.type)) throw new TypeError(message);
        throw typeof v === 'number' ? new RangeError(message) : new Error(message);
      }
    }
  }
  return options as EmbeddingOptions;
}

const scopes: EmbeddingOptions[] = [];

/**
 * Runs `fn` with these embedding options in effect for the columns it creates (as
 * HybridBackend's hb.scope). Scopes nest; the innermost setting wins.
 */
export function scope<T>(options: EmbeddingOptions, fn: () => T): T {
  if (typeof fn !== 'function') throw new TypeError('scope: the second argument must be a function');
  scopes.push(checkEmbeddingOptions(options, 'scope'));
  let result: T;
  try {
    result = fn();
  } catch (error) {
    scopes.pop();
    throw error;
  }
  if (result instanceof Promise) {
    // The options apply to what fn creates synchronously; an async fn's later columns
    // would see whatever scope is current then, so refuse the ambiguity.
    scopes.pop();
    throw new TypeError('scope: fn must be synchronous (create the columns inside it, await outside)');
  }
  scopes.pop();
  return result;
}

function pick(value: unknown, names: readonly string[]): { found: boolean; value?: unknown } {
  if (value === undefined) return { found: false };
  if (!isPerColumnDict(value)) return { found: true, value };
  for (const name of names) if (Object.prototype.hasOwnProperty.call(value, name)) return { found: true, value: value[name] };
  if (Object.prototype.hasOwnProperty.call(value, '*')) return { found: true, value: value['*'] };
  return { found: false };
}

function envOption(name: EmbeddingOptionName): unknown {
  const rule = rules[name];
  const text = process.env[rule.env];
  if (text === undefined || text === '') return undefined;
  let value: unknown;
  if (text.trim().startsWith('{')) {
    try {
      value = JSON.parse(text);
    } catch {
      throw new Error(`${rule.env}: not valid JSON: ${text}`);
    }
    if (!isPerColumnDict(value)) throw new Error(`${rule.env}: a JSON value must be an object of column name -> value`);
  } else {
    value = rule.parseEnv(text);
  }
  checkEmbeddingOptions({ [name]: value }, rule.env, true);
  return value;
}

/**
 * Every option's value for a column, by precedence column > scope (innermost first) >
 * environment > default. `names` are the names a per-column dict may use: the
 * categorical column's name (HybridBackend's key) and the embedding column's.
 */
export function resolveEmbeddingOptions(columnOptions: EmbeddingOptions, names: readonly string[]): EmbeddingOptionValues {
  const resolved: Record<string, unknown> = {};
  for (const name of embeddingOptionNames) {
    const levels: Array<() => unknown> = [() => columnOptions[name], ...scopes.slice().reverse().map((s) => () => s[name]), () => envOption(name)];
    let chosen: { found: boolean; value?: unknown } = { found: false };
    for (const level of levels) {
      chosen = pick(level(), names);
      if (chosen.found) break;
    }
    resolved[name] = chosen.found ? chosen.value : rules[name].fallback;
  }
  return resolved as unknown as EmbeddingOptionValues;
}
