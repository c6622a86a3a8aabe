// A Prometheus histogram that counts in plain arrays and hands prom-client its values only when
// scraped. prom-client's own Histogram builds, checks and hashes a labels object on every observe
// (~370 ns); the store-call histogram is observed on every store call, so here an observe is a
// binary search over the bounds and three adds. The registry sees an object with prom-client's
// metric surface (name, help, type, aggregator, get, getForPromString, reset): the text it writes
// is the one a prom-client Histogram of the same bounds and observations writes.

/** One series' updater (the recorder's Series.observe). */
export type Observe = (value: number) => void;

interface Bucketed {
  readonly labels: Readonly<Record<string, string>>;
  /** Observations per bound (not cumulative); the last slot holds those above every bound. */
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

/** prom-client's value pair, as its Histogram exports it. */
interface ValuePair {
  value: number;
  labels: Record<string, string | number>;
  metricName: string;
  sharedLabels?: Readonly<Record<string, string>>;
  exemplar?: null;
}

export class FastHistogram {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly labelNames: readonly string[];
  readonly #bounds: Float64Array;
  // Series by their label values joined with a NUL (a character no label value keeps: see
  // labels.ts). Bounded as the series are (the label caps); looked up only when the recorder
  // resolves a series, never per observe.
  readonly #series = new Map<string, Bucketed>();

  constructor(name: string, help: string, labelNames: readonly string[], bounds: readonly number[]) {
    this.name = name;
    this.help = help;
    this.labelNames = labelNames;
    this.#bounds = Float64Array.from(bounds);
  }

  /** The updater of the series of `values` (in labelNames' order), made on first use. */
  series(values: readonly string[]): Observe {
    const key = values.join('\u0000');
    let found = this.#series.get(key);
    if (found === undefined) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((name, i) => {
        labels[name] = values[i] as string;
      });
      found = { labels, counts: new Float64Array(this.#bounds.length + 1), sum: 0, count: 0 };
      this.#series.set(key, found);
    }
    const series = found;
    const bounds = this.#bounds;
    return (value) => {
      // The first bound >= value (a bound's bucket includes it, as `le` says); past the last: +Inf.
      let lo = 0;
      let hi = bounds.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if ((bounds[mid] as number) < value) lo = mid + 1;
        else hi = mid;
      }
      (series.counts as { [i: number]: number })[lo] = (series.counts[lo] as number) + 1;
      series.sum += value;
      series.count += 1;
    };
  }

  /** The registry's text export: bucket labels apart from the series' shared labels. */
  getForPromString(): Promise<{
    name: string;
    help: string;
    type: string;
    values: ValuePair[];
    aggregator: string;
  }> {
    const bucket = `${this.name}_bucket`;
    const values: ValuePair[] = [];
    for (const s of this.#series.values()) {
      if (s.count === 0) continue;
      let acc = 0;
      this.#bounds.forEach((le, i) => {
        acc += s.counts[i] as number;
        values.push({
          value: acc,
          labels: { le },
          metricName: bucket,
          sharedLabels: s.labels,
          exemplar: null,
        });
      });
      values.push(
        {
          value: s.count,
          labels: { le: '+Inf' },
          metricName: bucket,
          sharedLabels: s.labels,
          exemplar: null,
        },
        { value: s.sum, labels: {}, metricName: `${this.name}_sum`, sharedLabels: s.labels },
        { value: s.count, labels: {}, metricName: `${this.name}_count`, sharedLabels: s.labels },
      );
    }
    return Promise.resolve({
      name: this.name,
      help: this.help,
      type: this.type,
      values,
      aggregator: this.aggregator,
    });
  }

  /** The JSON export (and a cluster aggregator's input): every label on the value itself. */
  async get(): Promise<{
    name: string;
    help: string;
    type: string;
    values: ValuePair[];
    aggregator: string;
  }> {
    const data = await this.getForPromString();
    data.values = data.values.map(({ sharedLabels, ...pair }) => ({
      ...pair,
      labels: { ...pair.labels, ...sharedLabels },
    }));
    return data;
  }

  /** `registry.resetMetrics()`: every series back to no observation. */
  reset(): void {
    for (const s of this.#series.values()) {
      s.counts.fill(0);
      s.sum = 0;
      s.count = 0;
    }
  }
}
