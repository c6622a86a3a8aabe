// onceflow/metrics on prom-client: createMetrics registers every metric of definitions.ts in one
// registry and hands out the event handlers that feed them.
import {
  Counter,
  Gauge,
  type Metric as PromMetric,
  type Registry as PromRegistry,
  Registry,
} from 'prom-client';
import { InvalidOptionError } from '../core/errors.js';
import type { Observer } from '../core/observer.js';
import { isPlainObject, keysOf, knownKeys } from '../core/validate.js';
import { timeStore } from '../store/observe-store.js';
import type { Store } from '../store/store.js';
import { METRICS, type MetricDefinition, STORE_CALL_BUCKETS } from './definitions.js';
import { FastHistogram } from './fast-histogram.js';
import { maxLabelValuesOption, prefixOption } from './options.js';
import { type ObservedEvent, Recorder, type Sink } from './recorder.js';

/** Options of {@link createMetrics}. */
export interface MetricsOptions {
  /**
   * The prom-client registry the metrics are registered in. Default: a new `Registry` of its own
   * (not prom-client's global `register`, which every library of the process shares: a second
   * `createMetrics` there would clash). Pass `register` to scrape them with the process's others.
   */
  registry?: PromRegistry;
  /** Prepended to every metric name. Default `'onceflow_'`; `''` for none. */
  prefix?: string;
  /**
   * Distinct values kept per label of each metric (configured names, store kinds, error codes);
   * later values are counted under `other`. Default 100, at most 10,000.
   */
  maxLabelValues?: number;
}

/** What {@link createMetrics} returns: the registry and the handlers to give each part. */
export interface Metrics {
  /** The registry holding every onceflow metric: serve `await registry.metrics()` on /metrics. */
  readonly registry: PromRegistry;
  /**
   * The `observer` option of every part: ledger, idempotency, limiter, ordering, snowflake, the
   * stream producer and consumer (onceflow/streams) and the gateway (onceflow/ws).
   */
  readonly observer: Observer<ObservedEvent>;
  /** `store` wrapped to time every contract call (what `observeStore(store, observer)` reports). */
  observeStore(store: Store): Store;
}

const KNOWN = keysOf<MetricsOptions>({ registry: true, prefix: true, maxLabelValues: true });
// Prometheus' metric name grammar.
const PROM_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

/**
 * Prometheus metrics for onceflow (prom-client, an optional peer): counters of ledger, idempotency,
 * limiter, ordering, streams and gateway outcomes, a histogram of store call latency, gauges of
 * reorder fill, compensator backlog and open connections (docs/metrics.md lists every name and
 * what should page). Labels are configured names and enumerated outcomes only, never an owner, key
 * or user, and each label keeps at most `maxLabelValues` values.
 *
 * @example
 * ```ts
 * import { Registry } from 'prom-client';
 * import { createMetrics } from 'onceflow/metrics';
 * const metrics = createMetrics({ registry: new Registry() });
 * const store = metrics.observeStore(memoryStore());
 * const ledger = createLedger({ store, capacity: 4, name: 'payouts', observer: metrics.observer });
 * await ledger.apply({ owner: 'p1', signature: 's1', deltas: { coins: 5 } });
 * await ledger.apply({ owner: 'p1', signature: 's1', deltas: { coins: 5 } });
 * const text = await metrics.registry.metrics();
 * text.includes('onceflow_ledger_applies_total{ledger="payouts",outcome="duplicate"} 1'); // true
 * ```
 */
export function createMetrics(options: MetricsOptions = {}): Metrics {
  if (!isPlainObject(options)) throw new InvalidOptionError('options', 'an options object', options);
  knownKeys('', options, KNOWN);
  const registry: PromRegistry = (options.registry as PromRegistry | undefined) ?? new Registry();
  if (
    typeof (registry as Partial<PromRegistry> | null)?.registerMetric !== 'function' ||
    typeof (registry as Partial<PromRegistry>).getSingleMetric !== 'function'
  ) {
    throw new InvalidOptionError('registry', 'a prom-client Registry', registry);
  }
  const prefix = prefixOption(
    options.prefix,
    PROM_NAME,
    'a Prometheus name prefix ([a-zA-Z_:][a-zA-Z0-9_:]*, at most 64 characters) or empty',
    'onceflow_',
  );
  const maxLabelValues = maxLabelValuesOption(options.maxLabelValues);
  // Checked before registering any: a refused registry is left as it was.
  const taken = METRICS.map((d) => prefix + d.name).filter((n) => registry.getSingleMetric(n) !== undefined);
  if (taken.length > 0) {
    throw new InvalidOptionError(
      'registry',
      `a registry without onceflow metrics of prefix '${prefix}' (it has ${taken[0]}: one createMetrics per registry and prefix)`,
      registry,
    );
  }
  const recorder = new Recorder(promSink(registry, prefix), maxLabelValues);
  const observer = recorder.observer;
  return Object.freeze({
    registry,
    observer,
    observeStore: (store: Store) => timeStore(store, recorder.storeCall),
  });
}

interface Child {
  inc?(n: number): void;
  set?(v: number): void;
  observe?(v: number): void;
}

// A counter series' growth since the last scrape: a plain add per event, handed to prom-client
// (one `inc` per grown series) by the Counter's collect hook, which every export runs first.
interface Pending {
  readonly child: Child;
  delta: number;
}

function promSink(registry: PromRegistry, prefix: string): Sink {
  const metrics = new Map<
    MetricDefinition,
    {
      metric: Child & { labels(...v: string[]): Child };
      children: Map<string, Child>;
      pending: Map<string, Pending>;
    }
  >();
  // Histograms count in plain arrays (fast-histogram.ts): prom-client's observe hashes labels.
  const histograms = new Map<MetricDefinition, FastHistogram>();
  for (const def of METRICS) {
    const config = {
      name: prefix + def.name,
      help: def.help,
      labelNames: def.labels.map((l) => l.name),
      registers: [registry],
    };
    if (def.type === 'histogram') {
      const histogram = new FastHistogram(
        config.name,
        def.help,
        config.labelNames,
        def.buckets ?? STORE_CALL_BUCKETS,
      );
      registry.registerMetric(histogram as unknown as PromMetric);
      histograms.set(def, histogram);
      continue;
    }
    // Bounded as the series are (the label caps): one entry per series that ever grew.
    const pending = new Map<string, Pending>();
    const metric =
      def.type === 'counter'
        ? new Counter({
            ...config,
            collect() {
              for (const p of pending.values()) {
                if (p.delta === 0) continue;
                const n = p.delta;
                p.delta = 0;
                p.child.inc?.(n);
              }
            },
          })
        : new Gauge(config);
    metrics.set(def, {
      metric: metric as unknown as Child & { labels(...v: string[]): Child },
      children: new Map(),
      pending,
    });
  }
  // A child per label tuple, kept: `labels(...)` builds and checks a labels object on every call
  // otherwise (the child itself still hashes its labels per update, inside prom-client). Bounded
  // as the series are (the label caps).
  const child = (def: MetricDefinition, values: readonly string[]): Child => {
    const histogram = histograms.get(def);
    if (histogram !== undefined) return { observe: histogram.series(values) };
    const entry = metrics.get(def) as NonNullable<ReturnType<typeof metrics.get>>;
    if (values.length === 0) return entry.metric;
    const key = values.join('\u0000');
    let found = entry.children.get(key);
    if (found === undefined) {
      found = entry.metric.labels(...values);
      entry.children.set(key, found);
    }
    return found;
  };
  // A counter's updater: a positive finite growth waits for the scrape; anything else (0, which
  // creates the series, or what prom-client refuses) goes to prom-client now, as it always did.
  const counter = (def: MetricDefinition, values: readonly string[], found: Child): ((n: number) => void) => {
    const entry = metrics.get(def) as NonNullable<ReturnType<typeof metrics.get>>;
    const key = values.join('\u0000');
    let p = entry.pending.get(key);
    if (p === undefined) entry.pending.set(key, (p = { child: found, delta: 0 }));
    const series = p;
    return (n) => {
      if (n > 0 && n !== Number.POSITIVE_INFINITY) series.delta += n;
      else found.inc?.(n);
    };
  };
  const noop = (): void => {};
  return {
    add: (def, values, n) => child(def, values).inc?.(n),
    set: (def, values, v) => child(def, values).set?.(v),
    observe: (def, values, v) => child(def, values).observe?.(v),
    series: (def, values) => {
      const found = child(def, values);
      return {
        add: def.type === 'counter' ? counter(def, values, found) : (found.inc?.bind(found) ?? noop),
        set: found.set?.bind(found) ?? noop,
        observe: found.observe ?? noop,
      };
    },
  };
}
