// onceflow/metrics on OpenTelemetry: the same events and metric table as createMetrics, recorded
// through an @opentelemetry/api Meter (counters, one histogram, observable gauges), named the OTel
// way (`onceflow.ledger.applies`, unit `{apply}`), with the same label caps as attributes.
import type { Attributes, Counter, Histogram, Meter, ObservableResult } from '@opentelemetry/api';
import { InvalidOptionError } from '../core/errors.js';
import type { Observer } from '../core/observer.js';
import { isPlainObject, keysOf, knownKeys } from '../core/validate.js';
import { timeStore } from '../store/observe-store.js';
import type { Store } from '../store/store.js';
import { METRICS, type MetricDefinition, STORE_CALL_BUCKETS } from './definitions.js';
import { maxLabelValuesOption, prefixOption } from './options.js';
import type { Metrics } from './prometheus.js';
import { type ObservedEvent, Recorder, type Sink } from './recorder.js';

/** Options of {@link createOtelMetrics}. */
export interface OtelMetricsOptions {
  /** The meter the instruments are created on (`metrics.getMeter('onceflow')` of @opentelemetry/api). */
  meter: Meter;
  /** Prepended to every instrument name. Default `'onceflow.'`; `''` for none. */
  prefix?: string;
  /** Distinct values kept per attribute of each instrument; later ones are `other`. Default 100. */
  maxLabelValues?: number;
}

/** What {@link createOtelMetrics} returns: the handlers to give each part, as {@link Metrics} has. */
export interface OtelMetrics extends Omit<Metrics, 'registry'> {
  /** The meter the instruments were created on. */
  readonly meter: Meter;
}

const KNOWN = keysOf<OtelMetricsOptions>({ meter: true, prefix: true, maxLabelValues: true });
// OpenTelemetry's instrument name grammar (the prefix is its start).
const OTEL_NAME = /^[A-Za-z][A-Za-z0-9_.\-/]*$/;

/**
 * OpenTelemetry metrics for onceflow (@opentelemetry/api, an optional peer): the instruments of
 * docs/metrics.md under OTel names (`onceflow.ledger.applies`, `onceflow.store.call.duration` in
 * `s`), fed by the same observer as {@link createMetrics}.
 *
 * @example
 * ```ts
 * import { metrics as otel } from '@opentelemetry/api';
 * import { createOtelMetrics } from 'onceflow/metrics';
 * const metrics = createOtelMetrics({ meter: otel.getMeter('onceflow') });
 * const limiter = createLimiter({ name: 'api', algorithm: 'gcra', limit: 1, window: '1s', observer: metrics.observer });
 * (await limiter.take('u1')).allowed; // true
 * (await limiter.take('u1')).allowed; // false
 * ```
 */
export function createOtelMetrics(options: OtelMetricsOptions): OtelMetrics {
  if (!isPlainObject(options))
    throw new InvalidOptionError('options', 'an options object with `meter`', options);
  knownKeys('', options, KNOWN);
  const meter = options.meter as Partial<Meter> | undefined;
  if (
    typeof meter?.createCounter !== 'function' ||
    typeof meter.createHistogram !== 'function' ||
    typeof meter.createObservableGauge !== 'function'
  ) {
    throw new InvalidOptionError('meter', 'an @opentelemetry/api Meter', options.meter);
  }
  const prefix = prefixOption(
    options.prefix,
    OTEL_NAME,
    'an OpenTelemetry name prefix ([A-Za-z][A-Za-z0-9_.-/]*, at most 64 characters) or empty',
    'onceflow.',
  );
  const recorder = new Recorder(
    otelSink(options.meter, prefix),
    maxLabelValuesOption(options.maxLabelValues),
  );
  const observer = recorder.observer;
  return Object.freeze({
    meter: options.meter,
    observer,
    observeStore: (store: Store) => timeStore(store, recorder.storeCall),
  });
}

interface Instrument {
  readonly counter?: Counter;
  readonly histogram?: Histogram;
  /** A gauge's last values, observed by its callback at each collection. */
  readonly gauge?: Map<string, { attributes: Attributes; value: number }>;
  /** Attributes objects per label tuple, kept (bounded by the label caps). */
  readonly attributes: Map<string, Attributes>;
}

function otelSink(meter: Meter, prefix: string): Sink {
  const instruments = new Map<MetricDefinition, Instrument>();
  for (const def of METRICS) {
    const name = prefix + def.otel;
    const opts = { description: def.help, unit: def.unit };
    const attributes = new Map<string, Attributes>();
    if (def.type === 'counter') {
      instruments.set(def, { counter: meter.createCounter(name, opts), attributes });
    } else if (def.type === 'histogram') {
      const advice = { explicitBucketBoundaries: [...(def.buckets ?? STORE_CALL_BUCKETS)] };
      instruments.set(def, { histogram: meter.createHistogram(name, { ...opts, advice }), attributes });
    } else {
      const values = new Map<string, { attributes: Attributes; value: number }>();
      meter.createObservableGauge(name, opts).addCallback((result: ObservableResult) => {
        for (const v of values.values()) result.observe(v.value, v.attributes);
      });
      instruments.set(def, { gauge: values, attributes });
    }
  }
  const lookup = (def: MetricDefinition, values: readonly string[]): [Instrument, string, Attributes] => {
    const instrument = instruments.get(def) as Instrument;
    const key = values.join('\u0000');
    let attrs = instrument.attributes.get(key);
    if (attrs === undefined) {
      attrs = Object.fromEntries(def.labels.map((l, i) => [l.name, values[i] as string]));
      instrument.attributes.set(key, attrs);
    }
    return [instrument, key, attrs];
  };
  return {
    add: (def, values, n) => {
      const [instrument, , attrs] = lookup(def, values);
      instrument.counter?.add(n, attrs);
    },
    set: (def, values, value) => {
      const [instrument, key, attributes] = lookup(def, values);
      instrument.gauge?.set(key, { attributes, value });
    },
    observe: (def, values, value) => {
      const [instrument, , attrs] = lookup(def, values);
      instrument.histogram?.record(value, attrs);
    },
  };
}
