// The model server: TensorFlow Serving's REST API (predict, model status, metadata) and
// Prometheus metrics over HTTP, for the newest complete version of an export directory,
// swapped for a newer one while requests keep being answered.
//
// Node's own http module, no framework: the surface is a handful of routes with JSON
// bodies, and the parts that matter here (stopping a body at its size limit, answering
// 100-continue, closing keep-alive connections on shutdown) are the http module's own
// calls, which a framework would only wrap.
import * as fs from 'fs';
import * as http from 'http';
import type { AddressInfo } from 'net';
import * as path from 'path';
import { MANIFEST_FILE } from './export_format';
import { MetricRegistry, PROMETHEUS_CONTENT_TYPE } from './metrics';
import { InvalidRequestError, parseJsonBody, parsePredictRequest, predictResponse, signatureDefJson } from './rest_request';
import type { ServableModel } from './servable';

export interface ServerOptions {
  /** Holds `<version>/` directories (integers; complete once `<version>/manifest.json` exists). */
  exportDir: string;
  /** The name in /v1/models/<name>; default: the export directory's basename. */
  modelName?: string;
  /** Default '127.0.0.1' (this machine only; '0.0.0.0' to serve other machines). */
  host?: string;
  /** Default 8501 (TF Serving's REST port); 0 = any free port. */
  port?: number;
  /** Makes a servable model of one version directory. */
  load: (versionDir: string) => Promise<ServableModel>;
  /** How often the export directory is looked at for a newer version; default 1000. */
  pollIntervalMs?: number;
  /** A request body larger than this is refused with 413; default 16 MiB. */
  maxRequestBytes?: number;
  /** Examples in one predict request at most; default 4096. */
  maxBatch?: number;
  /**
   * Predict requests being read or answered at once, at most; more get a 503 at once.
   * Each may buffer maxRequestBytes and its parse, so this bounds the server's memory.
   * Default 64.
   */
  maxInFlight?: number;
  /**
   * A request not received whole (headers and body) this long after it began is answered
   * 408 and its connection closed, so a client that sends slowly cannot hold one of
   * maxInFlight's places for long (Node's own limit is 5 minutes). Default 30000.
   */
  requestTimeoutMs?: number;
  /**
   * A version whose load failed is tried again this long after (a passing failure: device
   * memory still held by the old version, a network filesystem's hiccup), up to
   * maxLoadRetries times, and at once when its directory changes. Defaults 60000 and 5,
   * TF Serving's.
   */
  loadRetryMs?: number;
  maxLoadRetries?: number;
  /** Where loads, swaps and failures are reported; default: nowhere. */
  log?: (line: string) => void;
  /** Called each time a version starts being served (the first one, then each swap). */
  onServing?: (version: number) => void;
}

export interface ModelServer {
  /** http://host:port */
  readonly url: string;
  readonly port: number;
  readonly modelName: string;
  /** The version answering new requests; undefined until one has loaded. */
  readonly version: number | undefined;
  /**
   * Stops accepting connections, answers every request already received, closes the
   * models. Resolves once all is done; calling it again gives the same promise.
   */
  close(): Promise<void>;
}

const DEFAULTS = { host: '127.0.0.1', port: 8501, pollIntervalMs: 1000, maxRequestBytes: 16 * 1024 * 1024, maxBatch: 4096, maxInFlight: 64, requestTimeoutMs: 30_000, loadRetryMs: 60_000, maxLoadRetries: 5 };
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** An answer other than 200, with TF Serving's `{"error": message}` body. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** The client went away before its request was read: nobody to answer. */
class ClientGone extends Error {}

function isBadInput(error: unknown): boolean {
  // By its flag as well as its class: a model loaded through another copy of the module
  // throws another BadInputError class.
  return error instanceof Error && (error as { badInput?: unknown }).badInput === true;
}

/** A loaded version and the requests using it, so it is closed only once they are done. */
class LoadedVersion {
  users = 0;
  retired = false;
  closing = false;
  /** Resolves once the model is closed (however long after its retirement that is). */
  readonly closed: Promise<void>;
  markClosed: () => void = () => undefined;

  /** `version` is its directory's name: what URLs and newer versions are compared with. */
  constructor(
    readonly model: ServableModel,
    readonly version: number,
  ) {
    this.closed = new Promise((resolve) => (this.markClosed = resolve));
  }
}

/** A complete version directory and what identifies its contents (to retry a failed load only once they change). */
interface VersionDirectory {
  version: number;
  directory: string;
  stamp: string;
}

/** The complete versions in `exportDir`, newest first. Names that are not all digits (`.tmp-*`) are not versions. */
async function completeVersions(exportDir: string): Promise<VersionDirectory[]> {
  const entries = await fs.promises.readdir(exportDir, { withFileTypes: true });
  const found: VersionDirectory[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry.name) || !(entry.isDirectory() || entry.isSymbolicLink())) continue;
    const version = Number(entry.name);
    if (!Number.isSafeInteger(version)) continue;
    const directory = path.join(exportDir, entry.name);
    try {
      const [dirStat, manifestStat] = await Promise.all([fs.promises.stat(directory), fs.promises.stat(path.join(directory, MANIFEST_FILE))]);
      if (!dirStat.isDirectory() || !manifestStat.isFile()) continue;
      found.push({ version, directory, stamp: `${dirStat.mtimeMs}:${manifestStat.mtimeMs}:${manifestStat.size}` });
    } catch {
      // No manifest (not complete) or removed while looking: not a version now.
    }
  }
  return found.sort((a, b) => b.version - a.version);
}

export async function startServer(options: ServerOptions): Promise<ModelServer> {
  const exportDir = path.resolve(options.exportDir);
  const modelName = options.modelName ?? path.basename(exportDir);
  const host = options.host ?? DEFAULTS.host;
  const pollIntervalMs = options.pollIntervalMs ?? DEFAULTS.pollIntervalMs;
  const maxRequestBytes = options.maxRequestBytes ?? DEFAULTS.maxRequestBytes;
  const maxBatch = options.maxBatch ?? DEFAULTS.maxBatch;
  const maxInFlight = options.maxInFlight ?? DEFAULTS.maxInFlight;
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULTS.requestTimeoutMs;
  const loadRetryMs = options.loadRetryMs ?? DEFAULTS.loadRetryMs;
  const maxLoadRetries = options.maxLoadRetries ?? DEFAULTS.maxLoadRetries;
  // A failing log must not stop a swap or a shutdown half way.
  const log = (line: string): void => {
    try {
      options.log?.(line);
    } catch {
      // Nowhere left to say it.
    }
  };
  for (const [name, value, min] of [
    ['pollIntervalMs', pollIntervalMs, 1],
    ['maxRequestBytes', maxRequestBytes, 1],
    ['maxBatch', maxBatch, 1],
    ['maxInFlight', maxInFlight, 1],
    ['requestTimeoutMs', requestTimeoutMs, 1],
    ['loadRetryMs', loadRetryMs, 0],
    ['maxLoadRetries', maxLoadRetries, 0],
    ['port', options.port ?? DEFAULTS.port, 0],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < min) throw new RangeError(`startServer: ${name} must be a whole number >= ${min}, got ${value}`);
  }
  if (modelName === '' || /[/:]/.test(modelName)) throw new Error(`startServer: model name '${modelName}' cannot be part of /v1/models/<name> URLs`);
  // A typo in the directory is better said now than as a server that never has a version.
  const stat = await fs.promises.stat(exportDir).catch(() => undefined);
  if (!stat?.isDirectory()) throw new Error(`startServer: export directory ${exportDir} does not exist or is not a directory`);

  // --- metrics
  const metrics = new MetricRegistry();
  const requestsTotal = metrics.counter('hb_serving_requests_total', 'HTTP requests answered, by model, API method and status code.', ['model', 'method', 'code']);
  const requestErrors = metrics.counter('hb_serving_request_errors_total', 'HTTP requests answered with an error (status >= 400), by model and status code.', ['model', 'code']);
  const requestDuration = metrics.histogram('hb_serving_request_duration_seconds', 'Time from receiving a request to the end of its answer.', ['model', 'method'], DURATION_BUCKETS);
  const batchBuckets: number[] = [];
  for (let b = 1; b < maxBatch; b *= 2) batchBuckets.push(b);
  batchBuckets.push(maxBatch);
  const batchSizes = metrics.histogram('hb_serving_batch_size', 'Examples per predict request.', ['model'], batchBuckets);
  const modelVersion = metrics.gauge('hb_serving_model_version', 'The version being served (0: none loaded yet).', ['model']);
  modelVersion.set({ model: modelName }, 0);

  // --- versions: the one serving, the ones retired but still answering, failed loads
  let current: LoadedVersion | undefined;
  // Loaded and not closed yet: the serving version and retired ones still answering.
  const live = new Set<LoadedVersion>();
  const failed = new Map<number, { stamp: string; message: string; at: number; tries: number }>();
  // Not tried again: unchanged since it failed, and either retried enough or failed too lately.
  const waitsAfterFailure = (candidate: VersionDirectory): boolean => {
    const failure = failed.get(candidate.version);
    if (failure === undefined || failure.stamp !== candidate.stamp) return false;
    return failure.tries > maxLoadRetries || Date.now() - failure.at < loadRetryMs;
  };
  let shuttingDown = false;
  let lastScanError = '';

  const closeVersion = (loaded: LoadedVersion): void => {
    if (loaded.closing) return;
    loaded.closing = true;
    // A model whose close throws synchronously is a failed close like a rejected one.
    void Promise.resolve()
      .then(() => loaded.model.close())
      .then(
        () => log(`${modelName}: version ${loaded.version} closed`),
        (error: unknown) => log(`${modelName}: closing version ${loaded.version} failed: ${(error as Error)?.message ?? String(error)}`),
      )
      .finally(() => {
        live.delete(loaded);
        loaded.markClosed();
      });
  };

  const retire = (loaded: LoadedVersion): void => {
    loaded.retired = true;
    if (loaded.users === 0) closeVersion(loaded);
  };

  const acquire = (): LoadedVersion | undefined => {
    if (current) current.users++;
    return current;
  };

  const release = (loaded: LoadedVersion): void => {
    loaded.users--;
    if (loaded.retired && loaded.users === 0) closeVersion(loaded);
  };

  /**
   * Loads the newest complete version newer than the one serving, skipping failed loads
   * whose directory has not changed since. When the version serving is no longer on disk
   * (removed to roll back), the newest one that is takes its place, older or not, as TF
   * Serving's latest-version policy does.
   */
  const scan = async (): Promise<void> => {
    let versions: VersionDirectory[];
    try {
      versions = await completeVersions(exportDir);
      lastScanError = '';
    } catch (error) {
      const message = `${modelName}: cannot read ${exportDir}: ${(error as Error).message}`;
      if (message !== lastScanError) log(message);
      lastScanError = message;
      return;
    }
    const currentOnDisk = current !== undefined && versions.some((v) => v.version === current!.version);
    for (const candidate of versions) {
      if (shuttingDown || (current && currentOnDisk && candidate.version <= current.version)) return;
      if (waitsAfterFailure(candidate)) continue;
      let model: ServableModel;
      try {
        log(`${modelName}: loading version ${candidate.version} from ${candidate.directory}`);
        model = await options.load(candidate.directory);
      } catch (error) {
        const message = (error as Error)?.message ?? String(error);
        const before = failed.get(candidate.version);
        const tries = before?.stamp === candidate.stamp ? before.tries + 1 : 1;
        failed.set(candidate.version, { stamp: candidate.stamp, message, at: Date.now(), tries });
        log(`${modelName}: version ${candidate.version} failed to load, ${current ? `still serving version ${current.version}` : 'no version serving'}: ${message}`);
        continue;
      }
      failed.delete(candidate.version);
      const loaded = new LoadedVersion(model, candidate.version);
      live.add(loaded);
      if (shuttingDown) {
        closeVersion(loaded);
        return;
      }
      // From here new requests take the new version; the old one closes once its own are answered.
      const previous = current;
      current = loaded;
      modelVersion.set({ model: modelName }, loaded.version);
      log(`${modelName}: serving version ${loaded.version}${previous ? ` (was ${previous.version})` : ''}`);
      if (previous) retire(previous);
      try {
        options.onServing?.(loaded.version);
      } catch (error) {
        log(`${modelName}: onServing(${loaded.version}) failed: ${(error as Error)?.message ?? String(error)}`);
      }
      return;
    }
  };

  let pollTimer: NodeJS.Timeout | undefined;
  let scanning: Promise<void> = Promise.resolve();
  // Each scan starts once the previous one (and its load) is over: loads never overlap.
  const schedulePoll = (): void => {
    if (shuttingDown) return;
    pollTimer = setTimeout(() => {
      scanning = scan().finally(schedulePoll);
    }, pollIntervalMs);
  };

  // --- requests
  let inFlight = 0;
  let onIdle: (() => void) | undefined;

  const readBody = (req: http.IncomingMessage): Promise<Buffer> =>
    new Promise((resolve, reject) => {
      const declared = Number(req.headers['content-length']);
      if (declared > maxRequestBytes) {
        reject(new HttpError(413, `the request body is ${declared} bytes; this server takes at most ${maxRequestBytes}`, { Connection: 'close' }));
        return;
      }
      const chunks: Buffer[] = [];
      let received = 0;
      const onData = (chunk: Buffer): void => {
        received += chunk.length;
        if (received > maxRequestBytes) {
          // Stop keeping it; the answer's `Connection: close` makes Node close the
          // connection after it, so the rest is never read.
          req.off('data', onData);
          req.pause();
          reject(new HttpError(413, `the request body is over ${maxRequestBytes} bytes, the most this server takes`, { Connection: 'close' }));
          return;
        }
        chunks.push(chunk);
      };
      req.on('data', onData);
      req.once('end', () => resolve(Buffer.concat(chunks, received)));
      // Whichever says first that the client left (after 'end' these change nothing).
      req.once('aborted', () => reject(new ClientGone()));
      req.once('error', () => reject(new ClientGone()));
      req.once('close', () => reject(new ClientGone()));
    });

  const send = (res: http.ServerResponse, status: number, body: string, contentType: string, headers: Record<string, string> = {}): void => {
    if (res.headersSent || res.destroyed) return;
    res.statusCode = status;
    res.setHeader('Content-Type', contentType);
    res.setHeader('Content-Length', Buffer.byteLength(body));
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    // Shutting down: no more requests on this connection.
    if (shuttingDown) res.setHeader('Connection', 'close');
    res.end(body);
  };
  const sendJson = (res: http.ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void =>
    send(res, status, JSON.stringify(body), 'application/json', headers);

  /** Why no request can be answered now (a 503), or undefined when a version serves. */
  const notServing = (): HttpError | undefined => {
    if (shuttingDown) return new HttpError(503, `the server is shutting down`);
    if (current) return undefined;
    const failures = [...failed.entries()].map(([version, f]) => `version ${version}: ${f.message}`);
    return new HttpError(503, `model '${modelName}' has no version loaded yet (watching ${exportDir}${failures.length ? `; ${failures.join('; ')}` : ''})`);
  };

  const serving = (): LoadedVersion => {
    const why = notServing();
    if (why) throw why;
    return current as LoadedVersion;
  };

  const checkVersion = (requested: string | undefined, loaded: LoadedVersion): void => {
    if (requested !== undefined && Number(requested) !== loaded.version) {
      throw new HttpError(404, `version ${requested} of model '${modelName}' is not served (serving version ${loaded.version})`);
    }
  };

  const statusJson = (requested: string | undefined): unknown => {
    const loaded = serving();
    checkVersion(requested, loaded);
    const entries = [{ version: String(loaded.version), state: 'AVAILABLE', status: { error_code: 'OK', error_message: '' } }];
    if (requested === undefined) {
      // Newer versions that failed to load, as TF Serving lists them: ended, with their error.
      for (const [version, failure] of failed) {
        if (version > loaded.version) entries.push({ version: String(version), state: 'END', status: { error_code: 'UNKNOWN', error_message: failure.message } });
      }
    }
    return { model_version_status: entries };
  };

  const metadataJson = (requested: string | undefined): unknown => {
    const loaded = serving();
    checkVersion(requested, loaded);
    return {
      model_spec: { name: modelName, signature_name: '', version: String(loaded.version) },
      metadata: { signature_def: signatureDefJson(loaded.model.signature()) },
    };
  };

  let predicting = 0;
  const predict = async (req: http.IncomingMessage, requested: string | undefined): Promise<unknown> => {
    serving();
    if (predicting >= maxInFlight) throw new HttpError(503, `the server is busy: ${predicting} predict requests in flight, the most it takes; retry`, { 'Retry-After': '1' });
    predicting++;
    try {
      const text = (await readBody(req)).toString('utf8');
      return await predictParsed(parseJsonBody(text), requested);
    } finally {
      predicting--;
    }
  };

  const predictParsed = async (body: Record<string, unknown>, requested: string | undefined): Promise<unknown> => {
    // Taken after the body is read, so a slow upload holds no version; held until the
    // answer is made, so the version cannot be closed under it.
    const loaded = acquire();
    if (!loaded) throw notServing() ?? new HttpError(503, 'no version serves');
    try {
      checkVersion(requested, loaded);
      const signature = loaded.model.signature();
      const request = parsePredictRequest(body, signature, maxBatch);
      batchSizes.observe({ model: modelName }, request.batchSize);
      const outputs = await loaded.model.predict(request.features);
      return predictResponse(outputs, signature, request);
    } finally {
      release(loaded);
    }
  };

  const ROUTE = /^\/v1\/models\/([^/:]+)(?:\/versions\/([^/:]+))?(?:(\/metadata)|:([A-Za-z]+))?$/;

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse, route: { model: string; method: string }): Promise<void> => {
    const pathname = (req.url ?? '/').split('?')[0];
    if (pathname === '/metrics') {
      route.method = 'metrics';
      if (req.method !== 'GET') throw new HttpError(405, `${req.method} ${pathname}: use GET`, { Allow: 'GET' });
      send(res, 200, metrics.text(), PROMETHEUS_CONTENT_TYPE);
      return;
    }
    const match = ROUTE.exec(pathname);
    if (!match) throw new HttpError(404, `no such path: ${req.method} ${pathname} (this server answers /v1/models/${modelName}[/versions/N][:predict|/metadata] and /metrics)`);
    const [, rawName, requested, metadataPath, verb] = match;
    let name: string;
    try {
      name = decodeURIComponent(rawName);
    } catch {
      name = rawName;
    }
    if (name !== modelName) throw new HttpError(404, `model '${name}' is not served here (this server serves '${modelName}')`);
    route.model = modelName;
    if (requested !== undefined && !/^\d+$/.test(requested)) throw new HttpError(404, `version '${requested}' of model '${modelName}': versions are whole numbers`);
    if (verb !== undefined && verb !== 'predict') {
      throw new HttpError(404, `:${verb} is not served here (this server answers :predict for model '${modelName}')`);
    }
    route.method = verb === 'predict' ? 'predict' : metadataPath ? 'metadata' : 'status';
    const wanted = route.method === 'predict' ? 'POST' : 'GET';
    if (req.method !== wanted) throw new HttpError(405, `${req.method} ${pathname}: use ${wanted}`, { Allow: wanted });
    if (route.method === 'predict') sendJson(res, 200, await predict(req, requested));
    else if (route.method === 'metadata') sendJson(res, 200, metadataJson(requested));
    else sendJson(res, 200, statusJson(requested));
  };

  /** TF Serving's `{"error": message}` with the status the error calls for. */
  const answerError = (req: http.IncomingMessage, res: http.ServerResponse, error: unknown): void => {
    if (error instanceof ClientGone) {
      res.destroy();
      return;
    }
    if (error instanceof HttpError) {
      sendJson(res, error.status, { error: error.message }, error.headers);
    } else if (error instanceof InvalidRequestError || isBadInput(error)) {
      sendJson(res, 400, { error: (error as Error).message });
    } else {
      const message = error instanceof Error ? error.message : String(error);
      log(`${modelName}: ${req.method} ${req.url} failed: ${error instanceof Error && error.stack ? error.stack : message}`);
      sendJson(res, 500, { error: message });
    }
  };

  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const started = process.hrtime.bigint();
    inFlight++;
    // Labels of the request's metrics: filled in as routing learns them.
    const route = { model: '', method: 'unknown' };
    res.once('finish', () => {
      const code = String(res.statusCode);
      requestsTotal.inc({ model: route.model, method: route.method, code });
      if (res.statusCode >= 400) requestErrors.inc({ model: route.model, code });
      requestDuration.observe({ model: route.model, method: route.method }, Number(process.hrtime.bigint() - started) / 1e9);
    });
    // Done when its handler is, not on the response's 'close': Node never closes (nor
    // finishes) a pipelined response queued behind one that closed the connection.
    handle(req, res, route)
      .catch((error: unknown) => answerError(req, res, error))
      .finally(() => {
        inFlight--;
        if (inFlight === 0) onIdle?.();
      });
  };

  // Node checks for requests over their time this often: a fraction of the limit.
  const server = http.createServer(
    { requestTimeout: requestTimeoutMs, headersTimeout: requestTimeoutMs, connectionsCheckingInterval: Math.min(1000, Math.ceil(requestTimeoutMs / 4)) },
    onRequest,
  );
  // A client that asks before sending a large body learns of the 413 without sending it.
  server.on('checkContinue', (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (!(Number(req.headers['content-length']) > maxRequestBytes)) res.writeContinue();
    onRequest(req, res);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? DEFAULTS.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  // The version there now is loaded before startServer resolves; later ones by polling.
  scanning = scan();
  await scanning;
  schedulePoll();

  let closed: Promise<void> | undefined;
  const close = async (): Promise<void> => {
    shuttingDown = true;
    clearTimeout(pollTimer);
    const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    // Every request received is answered (a load under way finishes and is closed).
    await new Promise<void>((resolve) => {
      onIdle = resolve;
      if (inFlight === 0) resolve();
    });
    await scanning;
    server.closeIdleConnections();
    await stopped;
    if (current) {
      retire(current);
      current = undefined;
    }
    // Including versions still held by requests whose clients left before their answer.
    await Promise.all([...live].map((loaded) => loaded.closed));
    log(`${modelName}: server closed`);
  };

  return {
    url,
    port,
    modelName,
    get version() {
      return current?.version;
    },
    close() {
      closed ??= close();
      return closed;
    },
  };
}
