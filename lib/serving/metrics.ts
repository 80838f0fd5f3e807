// The model server's metrics in Prometheus' text format 0.0.4: counters, gauges and
// histograms with labels, each registered on a registry that writes them all out.
// Ours rather than prom-client: the server needs five metrics and the text format is a
// page of rules; prom-client would add a dependency (and its process-wide default
// registry, which two servers in one process would share) for nothing we use.

/** The Content-Type a Prometheus scraper expects for the text format. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export type Labels = Readonly<Record<string, string>>;

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** A sample value as Prometheus (Go's ParseFloat) reads it. */
function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

function formatLabels(names: readonly string[], values: readonly string[], extra?: [string, string]): string {
  const pairs = names.map((name, i) => `${name}="${escapeLabelValue(values[i])}"`);
  if (extra) pairs.push(`${extra[0]}="${escapeLabelValue(extra[1])}"`);
  return pairs.length > 0 ? `{${pairs.join(',')}}` : '';
}

/** What every metric shares: a name, help, label names and one series per label set. */
abstract class Metric<Series> {
  abstract readonly type: 'counter' | 'gauge' | 'histogram';
  // Keyed by the label values in labelNames' order, so one label set is one series
  // however the caller ordered its object.
  protected readonly series = new Map<string, { values: string[]; series: Series }>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {
    if (!METRIC_NAME.test(name)) throw new Error(`metric name '${name}' is not a valid Prometheus name`);
    for (const label of labelNames) {
      if (!LABEL_NAME.test(label) || label.startsWith('__')) throw new Error(`metric '${name}': label name '${label}' is not valid`);
    }
  }

  protected abstract newSeries(): Series;
  protected abstract sampleLines(values: readonly string[], series: Series): string[];

  protected seriesOf(labels: Labels): Series {
    const values = this.labelNames.map((name) => {
      const value = labels[name];
      if (typeof value !== 'string') throw new Error(`metric '${this.name}': label '${name}' is not given`);
      return value;
    });
    if (Object.keys(labels).length !== this.labelNames.length) {
      throw new Error(`metric '${this.name}' takes the labels ${this.labelNames.join(', ')}, got ${Object.keys(labels).join(', ')}`);
    }
    const key = JSON.stringify(values);
    let entry = this.series.get(key);
    if (entry === undefined) {
      entry = { values, series: this.newSeries() };
      this.series.set(key, entry);
    }
    return entry.series;
  }

  /** The metric's HELP and TYPE lines and its samples. */
  text(): string {
    const lines = [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.type}`];
    for (const { values, series } of this.series.values()) lines.push(...this.sampleLines(values, series));
    return lines.join('\n');
  }
}

export class Counter extends Metric<{ value: number }> {
  readonly type = 'counter';

  protected newSeries(): { value: number } {
    return { value: 0 };
  }

  inc(labels: Labels = {}, by = 1): void {
    if (!(by >= 0)) throw new RangeError(`counter '${this.name}' can only go up, not by ${by}`);
    this.seriesOf(labels).value += by;
  }

  get(labels: Labels = {}): number {
    return this.seriesOf(labels).value;
  }

  protected sampleLines(values: readonly string[], series: { value: number }): string[] {
    return [`${this.name}${formatLabels(this.labelNames, values)} ${formatValue(series.value)}`];
  }
}

export class Gauge extends Metric<{ value: number }> {
  readonly type = 'gauge';

  protected newSeries(): { value: number } {
    return { value: 0 };
  }

  set(labels: Labels, value: number): void {
    this.seriesOf(labels).value = value;
  }

  protected sampleLines(values: readonly string[], series: { value: number }): string[] {
    return [`${this.name}${formatLabels(this.labelNames, values)} ${formatValue(series.value)}`];
  }
}

interface HistogramSeries {
  /** Observations <= each bucket's upper bound, not cumulated (cumulated when written). */
  counts: number[];
  sum: number;
  count: number;
}

export class Histogram extends Metric<HistogramSeries> {
  readonly type = 'histogram';
  readonly buckets: readonly number[];

  constructor(name: string, help: string, labelNames: readonly string[], buckets: readonly number[]) {
    super(name, help, labelNames);
    if (labelNames.includes('le')) throw new Error(`histogram '${name}': 'le' is the bucket label, not one of its own`);
    const finite = buckets.filter((b) => b !== Infinity);
    for (let i = 1; i < finite.length; i++) {
      if (!(finite[i] > finite[i - 1])) throw new Error(`histogram '${name}': bucket bounds must increase, got ${finite.join(', ')}`);
    }
    this.buckets = [...finite, Infinity];
  }

  protected newSeries(): HistogramSeries {
    return { counts: new Array<number>(this.buckets.length).fill(0), sum: 0, count: 0 };
  }

  observe(labels: Labels, value: number): void {
    const series = this.seriesOf(labels);
    const bucket = this.buckets.findIndex((bound) => value <= bound);
    series.counts[bucket === -1 ? this.buckets.length - 1 : bucket]++;
    series.sum += value;
    series.count++;
  }

  protected sampleLines(values: readonly string[], series: HistogramSeries): string[] {
    const lines: string[] = [];
    let cumulative = 0;
    this.buckets.forEach((bound, i) => {
      cumulative += series.counts[i];
      lines.push(`${this.name}_bucket${formatLabels(this.labelNames, values, ['le', formatValue(bound)])} ${cumulative}`);
    });
    lines.push(`${this.name}_sum${formatLabels(this.labelNames, values)} ${formatValue(series.sum)}`);
    lines.push(`${this.name}_count${formatLabels(this.labelNames, values)} ${series.count}`);
    return lines;
  }
}

/** The metrics of one server, written out in the order they were registered. */
export class MetricRegistry {
  private readonly metrics = new Map<string, Metric<unknown>>();

  private add<M extends Metric<unknown>>(metric: M): M {
    if (this.metrics.has(metric.name)) throw new Error(`metric '${metric.name}' is registered already`);
    this.metrics.set(metric.name, metric);
    return metric;
  }

  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.add(new Counter(name, help, labelNames));
  }

  gauge(name: string, help: string, labelNames: readonly string[] = []): Gauge {
    return this.add(new Gauge(name, help, labelNames));
  }

  histogram(name: string, help: string, labelNames: readonly string[], buckets: readonly number[]): Histogram {
    return this.add(new Histogram(name, help, labelNames, buckets));
  }

  /** The exposition a scrape of /metrics answers (text format 0.0.4, ending in a newline). */
  text(): string {
    return [...this.metrics.values()].map((metric) => metric.text()).join('\n') + '\n';
  }
}
