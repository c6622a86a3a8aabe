// The metric table of onceflow/metrics: every name, label, unit and dashboard panel comes from
// here (the Prometheus recorder, the OpenTelemetry recorder, scripts/gen-dashboard.mjs and the
// docs test read it), so a name is spelt once.
import type { ObservedDecisionReason } from '../core/observer.js';
import type { WsErrorCode } from '../ws/errors.js';

/** A label: `values` lists every value it can take (an enumerated label); none: a configured name. */
export interface LabelDefinition {
  readonly name: string;
  readonly values?: readonly string[];
}

/** One metric of onceflow/metrics (its Prometheus name without the prefix). */
export interface MetricDefinition {
  /** Prometheus name without the prefix (`ledger_applies_total`). */
  readonly name: string;
  /** OpenTelemetry name without the prefix (`ledger.applies`). */
  readonly otel: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  readonly help: string;
  /** UCUM unit for OpenTelemetry (`s`, `1`, `{connection}`). */
  readonly unit: string;
  readonly labels: readonly LabelDefinition[];
  /** Dashboard row the metric's panel sits in. */
  readonly row: string;
}

const outcomes = <const T extends readonly string[]>(...values: T) => values;

const LEDGER_APPLY = outcomes('applied', 'duplicate', 'stale', 'failed');
const LEDGER_RESOLVE = outcomes('applied', 'duplicate', 'unknown', 'failed');
const IDEMPOTENCY = outcomes('executed', 'replayed', 'in-progress', 'mismatch', 'failed');
const REASONS = [
  'allowed',
  'limited',
  'blocked',
  'cost-exceeds-limit',
  'degraded-deny',
  'degraded-allow',
  'degraded-local',
] as const satisfies readonly ObservedDecisionReason[];
const POLICIES = outcomes('deny', 'allow', 'local', 'throw');
const PUSH = outcomes('released', 'buffered', 'late', 'duplicate', 'stale', 'rejected');
const GAP_CAUSE = outcomes('timeout', 'overflow');
const GATE = outcomes('applied', 'duplicate', 'stale', 'failed');
const WAIT_CAUSE = outcomes('rollback', 'sequence');
const BOOL = outcomes('true', 'false');
const CLOSE_CODES = [
  'FRAME_TOO_LARGE',
  'BAD_ENCODING',
  'NOT_JSON',
  'BAD_FRAME',
  'UNKNOWN_FIELD',
  'FORBIDDEN_KEY',
  'TOO_DEEP',
  'BAD_VERSION',
  'UNEXPECTED_FRAME',
  'AUTH_FAILED',
  'BAD_SEQ',
  'TOO_MANY_IN_FLIGHT',
  'BAD_ACK',
  'SESSION_REPLACED',
  'TOO_MANY_CONNECTIONS',
  'SLOW_CONSUMER',
  'HEARTBEAT_TIMEOUT',
  'DRAINING',
  'INTERNAL',
  'CLIENT',
] as const satisfies readonly (WsErrorCode | 'CLIENT')[];
// Every close code is listed: a code added to WsErrorCode and missing here fails to compile.
type MissingCloseCode = Exclude<WsErrorCode | 'CLIENT', (typeof CLOSE_CODES)[number]>;
const closeCodesWhole: [MissingCloseCode] extends [never] ? true : MissingCloseCode = true;
void closeCodesWhole;

const name = (label: string): LabelDefinition => ({ name: label });
const enumerated = (label: string, values: readonly string[]): LabelDefinition => ({ name: label, values });

/**
 * Store call latency buckets, seconds: 5 µs (a memory store call) up to 2.5 s (past the Redis and
 * PostgreSQL stores' default 1 s timeouts, so a timed-out call still lands in a finite bucket).
 * 18 buckets x ~20 operations x a few stores stays far under a thousand series.
 */
export const STORE_CALL_BUCKETS: readonly number[] = Object.freeze([
  0.000005, 0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
  0.25, 0.5, 1, 2.5,
]);

/** Every metric onceflow/metrics exports, in dashboard order. */
export const METRICS: readonly MetricDefinition[] = Object.freeze([
  // --- ledger ---
  {
    name: 'ledger_applies_total',
    otel: 'ledger.applies',
    type: 'counter',
    help: 'Ledger applies by outcome (applied, duplicate, stale, failed).',
    unit: '{apply}',
    labels: [name('ledger'), enumerated('outcome', LEDGER_APPLY)],
    row: 'Ledger',
  },
  {
    name: 'ledger_resolves_total',
    otel: 'ledger.resolves',
    type: 'counter',
    help: 'Ledger resolves of stale answers by outcome; unknown: neither applied nor duplicate could be proven.',
    unit: '{resolve}',
    labels: [name('ledger'), enumerated('outcome', LEDGER_RESOLVE)],
    row: 'Ledger',
  },
  {
    name: 'ledger_uncertain_total',
    otel: 'ledger.uncertain',
    type: 'counter',
    help: 'Ledger calls that failed with a store outcome of unknown (the entry may have been applied).',
    unit: '{call}',
    labels: [name('ledger'), enumerated('operation', outcomes('apply', 'resolve'))],
    row: 'Ledger',
  },
  // --- idempotency ---
  {
    name: 'idempotency_runs_total',
    otel: 'idempotency.runs',
    type: 'counter',
    help: 'Idempotent runs by outcome.',
    unit: '{run}',
    labels: [name('scope'), enumerated('outcome', IDEMPOTENCY)],
    row: 'Idempotency',
  },
  {
    name: 'idempotency_takeovers_total',
    otel: 'idempotency.takeovers',
    type: 'counter',
    help: 'Runs that took over another holder’s expired lease.',
    unit: '{run}',
    labels: [name('scope')],
    row: 'Idempotency',
  },
  {
    name: 'idempotency_leases_lost_total',
    otel: 'idempotency.leases_lost',
    type: 'counter',
    help: 'Runs that lost their lease while their function ran (another caller may run it too).',
    unit: '{run}',
    labels: [name('scope')],
    row: 'Idempotency',
  },
  // --- limiter ---
  {
    name: 'limiter_decisions_total',
    otel: 'limiter.decisions',
    type: 'counter',
    help: 'Limiter decisions by reason (blocked: the local block cache answered; degraded-*: the store failed).',
    unit: '{decision}',
    labels: [name('limiter'), enumerated('reason', REASONS)],
    row: 'Limiter',
  },
  {
    name: 'limiter_degraded_total',
    otel: 'limiter.degraded',
    type: 'counter',
    help: 'Takes the store failed or timed out for, answered by the degraded policy.',
    unit: '{decision}',
    labels: [name('limiter'), enumerated('policy', POLICIES)],
    row: 'Limiter',
  },
  // --- store ---
  {
    name: 'store_call_duration_seconds',
    otel: 'store.call.duration',
    type: 'histogram',
    help: 'Store contract calls by store kind and operation, on the monotonic clock.',
    unit: 's',
    labels: [name('store'), name('operation')],
    row: 'Store',
  },
  {
    name: 'store_errors_total',
    otel: 'store.errors',
    type: 'counter',
    help: 'Failed store calls by store kind, operation and error code (or class name).',
    unit: '{call}',
    labels: [name('store'), name('operation'), name('error')],
    row: 'Store',
  },
  // --- ordering ---
  {
    name: 'reorder_pushes_total',
    otel: 'reorder.pushes',
    type: 'counter',
    help: 'Reorder buffer pushes by outcome (late: behind a forced advance).',
    unit: '{push}',
    labels: [enumerated('outcome', PUSH)],
    row: 'Ordering',
  },
  {
    name: 'reorder_released_total',
    otel: 'reorder.released',
    type: 'counter',
    help: 'Items the reorder buffers released in order.',
    unit: '{item}',
    labels: [],
    row: 'Ordering',
  },
  {
    name: 'reorder_buffered',
    otel: 'reorder.buffered',
    type: 'gauge',
    help: 'Items held by the reorder buffer after its latest push.',
    unit: '{item}',
    labels: [],
    row: 'Ordering',
  },
  {
    name: 'reorder_missing',
    otel: 'reorder.missing',
    type: 'gauge',
    help: 'Numbers the reorder buffer remembers as missing after its latest push.',
    unit: '{item}',
    labels: [],
    row: 'Ordering',
  },
  {
    name: 'reorder_forced_advances_total',
    otel: 'reorder.forced_advances',
    type: 'counter',
    help: 'Gaps given up on (forced advances) by cause.',
    unit: '{gap}',
    labels: [enumerated('cause', GAP_CAUSE)],
    row: 'Ordering',
  },
  {
    name: 'reorder_skipped_total',
    otel: 'reorder.skipped',
    type: 'counter',
    help: 'Sequence numbers skipped by forced advances, by cause.',
    unit: '{item}',
    labels: [enumerated('cause', GAP_CAUSE)],
    row: 'Ordering',
  },
  {
    name: 'reorder_gap_timeout_seconds',
    otel: 'reorder.gap_timeout',
    type: 'gauge',
    help: 'The adaptive gap timeout’s current value.',
    unit: 's',
    labels: [],
    row: 'Ordering',
  },
  {
    name: 'compensator_backlog',
    otel: 'compensator.backlog',
    type: 'gauge',
    help: 'Ranges the compensator still has queued, waiting for a retry or in flight.',
    unit: '{range}',
    labels: [],
    row: 'Ordering',
  },
  {
    name: 'compensator_ranges_total',
    otel: 'compensator.ranges',
    type: 'counter',
    help: 'Compensator ranges by event (queued, retried, filled, given-up).',
    unit: '{range}',
    labels: [enumerated('event', outcomes('queued', 'retried', 'filled', 'given-up'))],
    row: 'Ordering',
  },
  {
    name: 'version_gate_upserts_total',
    otel: 'version_gate.upserts',
    type: 'counter',
    help: 'Version gate upserts by outcome.',
    unit: '{upsert}',
    labels: [name('gate'), enumerated('outcome', GATE)],
    row: 'Ordering',
  },
  {
    name: 'snowflake_clock_waits_total',
    otel: 'snowflake.clock_waits',
    type: 'counter',
    help: 'Snowflake waits for the clock by cause (rollback within tolerance, sequence spent).',
    unit: '{wait}',
    labels: [enumerated('cause', WAIT_CAUSE)],
    row: 'Ordering',
  },
  {
    name: 'snowflake_clock_wait_seconds_total',
    otel: 'snowflake.clock_wait.time',
    type: 'counter',
    help: 'Time snowflake generators spent waiting for the clock, by cause.',
    unit: 's',
    labels: [enumerated('cause', WAIT_CAUSE)],
    row: 'Ordering',
  },
  {
    name: 'snowflake_rollbacks_refused_total',
    otel: 'snowflake.rollbacks_refused',
    type: 'counter',
    help: 'Clock rollbacks beyond the tolerance: next() threw.',
    unit: '{rollback}',
    labels: [],
    row: 'Ordering',
  },
  // --- streams ---
  {
    name: 'stream_published_total',
    otel: 'stream.published',
    type: 'counter',
    help: 'Events a stream producer published, by whether the dedup record answered (duplicate).',
    unit: '{event}',
    labels: [enumerated('duplicate', BOOL)],
    row: 'Streams',
  },
  {
    name: 'stream_publish_retries_total',
    otel: 'stream.publish.retries',
    type: 'counter',
    help: 'Producer write attempts that failed and were retried.',
    unit: '{attempt}',
    labels: [],
    row: 'Streams',
  },
  {
    name: 'stream_producer_dead_letters_total',
    otel: 'stream.producer.dead_letters',
    type: 'counter',
    help: 'Events a producer gave up on, by reason.',
    unit: '{event}',
    labels: [enumerated('reason', outcomes('publish-failed', 'terminal-error'))],
    row: 'Streams',
  },
  {
    name: 'stream_backlog_full_total',
    otel: 'stream.backlog_full',
    type: 'counter',
    help: 'Publishes refused because the producer’s backlog was full.',
    unit: '{event}',
    labels: [],
    row: 'Streams',
  },
  {
    name: 'stream_consumer_bookings_total',
    otel: 'stream.consumer.bookings',
    type: 'counter',
    help: 'Ledger bookings of a stream consumer by outcome.',
    unit: '{entry}',
    labels: [enumerated('outcome', outcomes('applied', 'duplicate', 'stale'))],
    row: 'Streams',
  },
  {
    name: 'stream_consumer_dead_letters_total',
    otel: 'stream.consumer.dead_letters',
    type: 'counter',
    help: 'Entries a consumer dead-lettered, by reason.',
    unit: '{entry}',
    labels: [
      enumerated('reason', outcomes('max-deliveries', 'terminal-error', 'ledger-stale', 'handler-error')),
    ],
    row: 'Streams',
  },
  {
    name: 'stream_consumer_fenced_total',
    otel: 'stream.consumer.fenced',
    type: 'counter',
    help: 'Deliveries reclaimed or acked elsewhere: this consumer’s ack or effect was refused.',
    unit: '{entry}',
    labels: [],
    row: 'Streams',
  },
  {
    name: 'stream_consumer_handler_errors_total',
    otel: 'stream.consumer.handler_errors',
    type: 'counter',
    help: 'Handler failures (the entry is redelivered or dead-lettered).',
    unit: '{entry}',
    labels: [],
    row: 'Streams',
  },
  {
    name: 'stream_consumer_trimmed_pending_total',
    otel: 'stream.consumer.trimmed_pending',
    type: 'counter',
    help: 'Pending entries trimmed from the stream before anyone acked them.',
    unit: '{entry}',
    labels: [],
    row: 'Streams',
  },
  {
    name: 'stream_consumer_errors_total',
    otel: 'stream.consumer.errors',
    type: 'counter',
    help: 'Failed Redis calls of a consumer, by operation (it goes on).',
    unit: '{call}',
    labels: [enumerated('operation', outcomes('read', 'ack', 'claim', 'touch', 'group'))],
    row: 'Streams',
  },
  // --- gateway ---
  {
    name: 'gateway_connections',
    otel: 'gateway.connections',
    type: 'gauge',
    help: 'Open gateway connections (past the handshake).',
    unit: '{connection}',
    labels: [],
    row: 'Gateway',
  },
  {
    name: 'gateway_closes_total',
    otel: 'gateway.closes',
    type: 'counter',
    help: 'Closed gateway connections by code (CLIENT: the client closed or the socket dropped).',
    unit: '{connection}',
    labels: [enumerated('code', CLOSE_CODES)],
    row: 'Gateway',
  },
  {
    name: 'gateway_resumes_total',
    otel: 'gateway.resumes',
    type: 'counter',
    help: 'Sessions continued by a reconnect, by whether everything after the offset was recovered.',
    unit: '{connection}',
    labels: [enumerated('recovered', BOOL)],
    row: 'Gateway',
  },
  {
    name: 'gateway_messages_total',
    otel: 'gateway.messages',
    type: 'counter',
    help: 'Client messages by outcome, and whether it was a re-send answered from the dedup window.',
    unit: '{message}',
    labels: [
      enumerated('outcome', outcomes('handled', 'limited', 'rejected')),
      enumerated('duplicate', BOOL),
    ],
    row: 'Gateway',
  },
  {
    name: 'gateway_heartbeat_timeouts_total',
    otel: 'gateway.heartbeat_timeouts',
    type: 'counter',
    help: 'Connections closed because the client missed its heartbeats (judged on this node’s clock).',
    unit: '{connection}',
    labels: [],
    row: 'Gateway',
  },
  {
    name: 'gateway_slow_consumer_closes_total',
    otel: 'gateway.slow_consumer_closes',
    type: 'counter',
    help: 'Connections closed because the client read slower than its send buffer allowed.',
    unit: '{connection}',
    labels: [],
    row: 'Gateway',
  },
  {
    name: 'gateway_upgrades_refused_total',
    otel: 'gateway.upgrades_refused',
    type: 'counter',
    help: 'Upgrades refused before the WebSocket opened, by reason.',
    unit: '{request}',
    labels: [enumerated('reason', outcomes('origin', 'path', 'request'))],
    row: 'Gateway',
  },
] satisfies MetricDefinition[]);

/** A metric of {@link METRICS} by its name without prefix; throws on a name it does not hold. */
export function metricDefinition(metric: string): MetricDefinition {
  const found = METRICS.find((m) => m.name === metric);
  if (found === undefined) throw new Error(`no onceflow metric named ${metric}`);
  return found;
}
