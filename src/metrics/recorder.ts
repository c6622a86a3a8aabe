// Turns onceflow's events (the core's OnceflowEvent, the gateway's GatewayEvent, the streams
// producer's and consumer's events) into updates of the metrics of definitions.ts, through a
// sink: the Prometheus and the OpenTelemetry adapters differ only in their sink.
import type { Observer, OnceflowEvent } from '../core/observer.js';
import type { CallReport } from '../store/observe-store.js';
import type { StreamConsumerEvent } from '../streams/consumer-options.js';
import type { ProducerEvent } from '../streams/producer-options.js';
import type { GatewayEvent } from '../ws/events.js';
import { METRICS, type MetricDefinition } from './definitions.js';
import { LabelCap } from './labels.js';

/**
 * Every event of every part, in one union: the core's ({@link OnceflowEvent}), the stream
 * producer's and consumer's (onceflow/streams) and the gateway's (onceflow/ws). A function of it,
 * such as `createMetrics(...).observer` or a logger, fits every part's `observer` option.
 */
export type ObservedEvent = OnceflowEvent | ProducerEvent | StreamConsumerEvent | GatewayEvent;

/** Where the recorder writes: label values arrive capped, in the definition's label order. */
export interface Sink {
  /** A counter grows by `n` (0 creates the series). */
  add(def: MetricDefinition, values: readonly string[], n: number): void;
  set(def: MetricDefinition, values: readonly string[], value: number): void;
  observe(def: MetricDefinition, values: readonly string[], value: number): void;
  /**
   * The updaters of one series, resolved once: the recorder keeps them per label tuple, so an
   * event costs a few Map lookups instead of a label key built per update. Optional: without it
   * the recorder calls add / set / observe.
   */
  series?(def: MetricDefinition, values: readonly string[]): Series;
}

/** One series' updaters (see Sink.series). */
export interface Series {
  add(n: number): void;
  set(value: number): void;
  observe(value: number): void;
}

// Label tuples by their raw values, one Map level per label; the last level holds the Series.
type SeriesTree = Map<string, SeriesTree | Series>;

interface Metric {
  readonly def: MetricDefinition;
  readonly cap: LabelCap;
  /** The metric's one name label (`ledger`, `scope`, `limiter`, `gate`), if it has exactly one. */
  readonly named: string | undefined;
  /**
   * Resolved series by raw label values. Only tuples whose every value survives the cap as itself
   * are kept (a value folded into `other` or cut short is resolved again each time), so it holds
   * at most one entry per live series: bounded by the label caps as the series are.
   */
  readonly series: SeriesTree;
}

/** Every combination of the enumerated labels' values, with `names` in the name labels' places. */
function combinations(def: MetricDefinition, names: readonly string[]): string[][] {
  let out: string[][] = [[]];
  let n = 0;
  for (const label of def.labels) {
    const values = label.values ?? [names[n++] as string];
    out = out.flatMap((prefix) => values.map((v) => [...prefix, v]));
  }
  return out;
}

/** The recorder: one per createMetrics / createOtelMetrics, holding the label caps. */
export class Recorder {
  readonly #sink: Sink;
  readonly #metrics = new Map<string, Metric>();
  // Gateway connections past the handshake, by the node's connection number: the gauge is its
  // size, so a close of a connection that never opened does not count down.
  readonly #open = new Set<number>();
  // Configured names already given their zeroed series, by label (see #zero).
  readonly #zeroed = new Map<string, Set<string>>();

  constructor(sink: Sink, maxLabelValues: number) {
    this.#sink = sink;
    for (const def of METRICS) {
      const names = def.labels.filter((l) => l.values === undefined);
      const named = names.length > 0;
      this.#metrics.set(def.name, {
        def,
        cap: new LabelCap(def, maxLabelValues),
        named: names.length === 1 && def.type === 'counter' ? names[0]?.name : undefined,
        series: new Map(),
      });
      // A metric of enumerated labels only starts with every series at zero, so a query of one
      // outcome answers 0 (not "no data") before it first happens.
      if (!named && def.type === 'counter') {
        for (const values of combinations(def, [])) sink.add(def, values, 0);
      }
      if (!named && def.type === 'gauge' && def.labels.length === 0) sink.set(def, [], 0);
    }
  }

  /** The `observer` option of every part: the core's, the streams' and the gateway's. */
  readonly observer: Observer<ObservedEvent> = (event) => {
    switch (event.part) {
      case 'gateway':
        return this.#gateway(event);
      case 'stream-producer':
        return this.#producer(event);
      case 'stream-consumer':
        return this.#consumer(event);
      default:
        return this.#core(event);
    }
  };

  /**
   * The report of one store operation's calls (timeStore's reporter): the same updates as a
   * `store` event through the observer, with the latency series resolved once.
   */
  readonly storeCall = (store: string, operation: string): CallReport => {
    const latency = this.#series(this.#metric('store_call_duration_seconds'), [store, operation]);
    return (durationMs, error) => {
      latency.observe(durationMs / 1000);
      if (error !== undefined) this.#add('store_errors_total', [store, operation, error]);
    };
  };

  #values(metric: Metric, raw: readonly string[]): string[] {
    const values = raw.map((v, i) => metric.cap.value(i, v));
    if (metric.named !== undefined) {
      const name = values[metric.def.labels.findIndex((l) => l.values === undefined)] as string;
      this.#zero(metric.named, name);
    }
    return values;
  }

  // A configured name seen for the first time (a ledger, a scope, a limiter, a gate) gets every
  // counter series of its part at zero: the ledger's resolves and uncertain calls as soon as it
  // applies, so "unknown resolves" answers 0 (not "no data") and an alert on it can fire on 1.
  // Bounded: at most maxLabelValues + 1 (`other`) names per label.
  #zero(label: string, name: string): void {
    let seen = this.#zeroed.get(label);
    if (seen === undefined) this.#zeroed.set(label, (seen = new Set()));
    if (seen.has(name)) return;
    seen.add(name);
    for (const metric of this.#metrics.values()) {
      if (metric.named !== label) continue;
      for (const zero of combinations(metric.def, [name])) this.#sink.add(metric.def, zero, 0);
    }
  }

  /** The series of `raw` on `metric`: from the tree, or resolved (capped, zeroed) and kept. */
  #series(metric: Metric, raw: readonly string[]): Series {
    let level = metric.series;
    const last = raw.length - 1;
    for (let i = 0; i < last; i++) {
      const next = level.get(raw[i] as string) as SeriesTree | undefined;
      if (next === undefined) return this.#resolve(metric, raw);
      level = next;
    }
    const found = level.get(last < 0 ? '' : (raw[last] as string)) as Series | undefined;
    return found ?? this.#resolve(metric, raw);
  }

  #resolve(metric: Metric, raw: readonly string[]): Series {
    const values = this.#values(metric, raw);
    const sink = this.#sink;
    const def = metric.def;
    const series: Series = sink.series?.(def, values) ?? {
      add: (n) => sink.add(def, values, n),
      set: (v) => sink.set(def, values, v),
      observe: (v) => sink.observe(def, values, v),
    };
    if (!values.every((v, i) => v === raw[i])) return series;
    let level = metric.series;
    const last = raw.length - 1;
    for (let i = 0; i < last; i++) {
      const key = raw[i] as string;
      let next = level.get(key) as SeriesTree | undefined;
      if (next === undefined) level.set(key, (next = new Map()));
      level = next;
    }
    level.set(last < 0 ? '' : (raw[last] as string), series);
    return series;
  }

  #metric(name: string): Metric {
    const metric = this.#metrics.get(name);
    if (metric === undefined) throw new Error(`no onceflow metric named ${name}`);
    return metric;
  }

  #add(name: string, raw: readonly string[], n = 1): void {
    this.#series(this.#metric(name), raw).add(n);
  }

  #set(name: string, value: number): void {
    this.#sink.set(this.#metric(name).def, [], value);
  }

  #core(e: OnceflowEvent): void {
    switch (e.part) {
      case 'ledger': {
        if (e.type === 'pre-check') {
          this.#add('ledger_prechecks_total', [e.ledger, e.outcome]);
          return;
        }
        this.#add(e.type === 'apply' ? 'ledger_applies_total' : 'ledger_resolves_total', [
          e.ledger,
          e.outcome,
        ]);
        if (e.outcome === 'failed' && e.storeOutcome === 'unknown')
          this.#add('ledger_uncertain_total', [e.ledger, e.type]);
        return;
      }
      case 'idempotency': {
        if (e.type === 'lease-lost') {
          this.#add('idempotency_leases_lost_total', [e.scope]);
          return;
        }
        if (e.type === 'pre-check') {
          this.#add('idempotency_prechecks_total', [e.scope, e.outcome]);
          return;
        }
        this.#add('idempotency_runs_total', [e.scope, e.outcome]);
        if (e.takeover) this.#add('idempotency_takeovers_total', [e.scope]);
        return;
      }
      case 'limiter': {
        if (e.type === 'decision') this.#add('limiter_decisions_total', [e.limiter, e.reason]);
        else if (e.type === 'degraded') this.#add('limiter_degraded_total', [e.limiter, e.policy]);
        else if (e.type === 'lease') {
          this.#add('limiter_leases_total', [e.limiter, e.outcome]);
          this.#add('limiter_lease_points_total', [e.limiter, e.outcome], e.points);
        } else
          this.#series(this.#metric('limiter_window_deviation_ratio'), [e.limiter]).observe(
            (e.estimate - e.exact) / e.max,
          );
        return;
      }
      case 'reorder': {
        if (e.type === 'gap') {
          this.#add('reorder_forced_advances_total', [e.cause]);
          this.#add('reorder_skipped_total', [e.cause], e.to - e.from + 1);
          return;
        }
        this.#add('reorder_pushes_total', [e.outcome]);
        if (e.released > 0) this.#add('reorder_released_total', [], e.released);
        this.#set('reorder_buffered', e.buffered);
        this.#set('reorder_missing', e.missing);
        return;
      }
      case 'adaptive-timeout':
        this.#set('reorder_gap_timeout_seconds', e.timeoutMs / 1000);
        return;
      case 'compensator': {
        const event =
          e.type === 'gap'
            ? 'queued'
            : e.type === 'retry'
              ? 'retried'
              : e.type === 'filled'
                ? 'filled'
                : 'given-up';
        this.#add('compensator_ranges_total', [event]);
        this.#set('compensator_backlog', e.backlog);
        return;
      }
      case 'version-gate':
        this.#add('version_gate_upserts_total', [e.gate, e.outcome]);
        return;
      case 'snowflake': {
        if (e.type === 'rollback-refused') {
          this.#add('snowflake_rollbacks_refused_total', []);
          return;
        }
        this.#add('snowflake_clock_waits_total', [e.cause]);
        this.#add('snowflake_clock_wait_seconds_total', [e.cause], e.ms / 1000);
        return;
      }
      case 'guard': {
        if (e.type === 'get') this.#add('guard_gets_total', [e.guard, e.outcome]);
        else this.#add('guard_state_changes_total', [e.guard, e.state]);
        return;
      }
      case 'store': {
        this.#series(this.#metric('store_call_duration_seconds'), [e.store, e.operation]).observe(
          e.durationMs / 1000,
        );
        if (e.error !== undefined) this.#add('store_errors_total', [e.store, e.operation, e.error]);
        return;
      }
      default:
        // A part added to the event table after this recorder: ignored, never a throw on its path.
        return;
    }
  }

  #gateway(e: GatewayEvent): void {
    if (e.type === 'message') {
      this.#add('gateway_messages_total', [e.outcome, String(e.duplicate)]);
    } else if (e.type === 'limit') {
      this.#add('gateway_limit_decisions_total', [e.reason]);
    } else if (e.type === 'heartbeat') {
      // A drop is counted by its close (HEARTBEAT_TIMEOUT) below; here only the stall it discounted.
      if (e.verdict === 'spared') this.#add('gateway_heartbeat_spared_total', []);
      if (e.stalledMs > 0)
        this.#add('gateway_heartbeat_stall_seconds_total', [e.verdict], e.stalledMs / 1000);
    } else if (e.type === 'refused') {
      this.#add('gateway_upgrades_refused_total', [e.reason]);
    } else if (e.type === 'state' && e.state === 'open') {
      this.#open.add(e.connection);
      this.#set('gateway_connections', this.#open.size);
      if (e.continued === true) this.#add('gateway_resumes_total', [String(e.recovered === true)]);
    } else if (e.type === 'state' && e.state === 'closed') {
      if (this.#open.delete(e.connection)) this.#set('gateway_connections', this.#open.size);
      const code = e.code ?? 'CLIENT';
      this.#add('gateway_closes_total', [code]);
      if (code === 'HEARTBEAT_TIMEOUT') this.#add('gateway_heartbeat_timeouts_total', []);
      else if (code === 'SLOW_CONSUMER') this.#add('gateway_slow_consumer_closes_total', []);
    }
  }

  #producer(e: ProducerEvent): void {
    switch (e.type) {
      case 'published':
        this.#add('stream_published_total', [String(e.duplicate)]);
        return;
      case 'retried':
        this.#add('stream_publish_retries_total', []);
        return;
      case 'dead-lettered':
        this.#add('stream_producer_dead_letters_total', [e.reason]);
        return;
      case 'backlog-full':
        this.#add('stream_backlog_full_total', []);
        return;
      default:
        return;
    }
  }

  #consumer(e: StreamConsumerEvent): void {
    switch (e.type) {
      case 'applied':
        this.#add('stream_consumer_bookings_total', [e.outcome]);
        return;
      case 'dead-letter':
        this.#add('stream_consumer_dead_letters_total', [e.reason]);
        return;
      case 'fenced':
        this.#add('stream_consumer_fenced_total', []);
        return;
      case 'pre-check':
        this.#add('stream_consumer_prechecks_total', [e.outcome]);
        return;
      case 'handler-error':
        this.#add('stream_consumer_handler_errors_total', []);
        return;
      case 'deleted':
        if (e.ids.length > 0) this.#add('stream_consumer_trimmed_pending_total', [], e.ids.length);
        return;
      case 'error':
        this.#add('stream_consumer_errors_total', [e.operation]);
        return;
      case 'delivered':
        this.#add('stream_consumer_delivered_total', [], e.count);
        return;
      case 'acked':
        this.#add('stream_consumer_acked_total', [], e.count);
        return;
      case 'reclaimed':
        this.#add('stream_consumer_reclaimed_total', [], e.count);
        return;
      case 'lag':
        this.#set('stream_consumer_pending', e.pending);
        // NaN, not the last figure nor 0: a lag Redis cannot tell must not read as caught up.
        this.#set('stream_consumer_lag', e.lag ?? Number.NaN);
        return;
      default:
        return;
    }
  }
}
