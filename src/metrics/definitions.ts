// The metric table of onceflow/metrics: every name, label, unit and dashboard panel comes from
// here (the Prometheus recorder, the OpenTelemetry recorder, scripts/gen-dashboard.mjs and the
// docs test read it), so a name is spelt once.
import type { ObservedDecisionReason, PreCheckOutcome } from '../core/observer.js';
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
  /**
   * How the dashboard combines a gauge's series of many processes: `max` for a figure each of
   * them reports whole (a consumer group's pending count); default: `max` for durations, else `sum`.
   */
  readonly across?: 'max' | 'sum';
  /** A histogram's bucket bounds (default {@link STORE_CALL_BUCKETS}, seconds). */
  readonly buckets?: readonly number[];
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
const LEASE_OUTCOMES = outcomes('granted', 'refused', 'returned', 'expired', 'failed');
const POLICIES = outcomes('deny', 'allow', 'local', 'throw');
const PUSH = outcomes('released', 'buffered', 'late', 'duplicate', 'stale', 'rejected');
const GAP_CAUSE = outcomes('timeout', 'overflow');
const GATE = outcomes('applied', 'duplicate', 'stale', 'failed');
const WAIT_CAUSE = outcomes('rollback', 'sequence');
const PRE_CHECK = outcomes('skipped', 'read-seen', 'read-unseen') satisfies readonly PreCheckOutcome[];
const GUARD_GET = outcomes('backend', 'joined', 'absent-filter', 'absent-null-cache');
const GUARD_STATE = outcomes('normal', 'degraded');
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

/**
 * Deviation buckets: (estimate - exact) / limit of a sampled `sliding-window` key. The bucketed
 * estimate is off by at most the oldest bucket's cost, which under even traffic is
 * limit x granularity / window (1/60 of the limit for 1 s buckets of a minute; the whole limit for
 * the classic 2-counter estimate, granularity = window): bounds from -1 to 1, finest near 0 where
 * a well-chosen granularity keeps it.
 */
export const DEVIATION_BUCKETS: readonly number[] = Object.freeze([
  -1, -0.5, -0.2, -0.1, -0.05, -0.02, -0.01, 0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1,
]);

type Row = Omit<MetricDefinition, 'row'>;
// A figure every process reports whole (each consumer of a group reads the group's count).
const whole = (row: Row): Row => ({ ...row, across: 'max' });
const define =
  (type: MetricDefinition['type']) =>
  (metric: string, otel: string, unit: string, labels: readonly LabelDefinition[], help: string): Row => ({
    name: metric,
    otel,
    type,
    help,
    unit,
    labels,
  });
const counter = define('counter');
const gauge = define('gauge');
const histogram = define('histogram');
const inRow = (row: string, metrics: readonly Row[]): MetricDefinition[] =>
  metrics.map((m) => ({ ...m, row }));

/** Every metric onceflow/metrics exports, in dashboard order. */
export const METRICS: readonly MetricDefinition[] = Object.freeze([
  ...inRow('Ledger', [
    counter(
      'ledger_applies_total',
      'ledger.applies',
      '{apply}',
      [name('ledger'), enumerated('outcome', LEDGER_APPLY)],
      'Ledger applies by outcome (applied, duplicate, stale, failed).',
    ),
    counter(
      'ledger_resolves_total',
      'ledger.resolves',
      '{resolve}',
      [name('ledger'), enumerated('outcome', LEDGER_RESOLVE)],
      'Ledger resolves of stale answers by outcome; unknown: neither applied nor duplicate could be proven.',
    ),
    counter(
      'ledger_uncertain_total',
      'ledger.uncertain',
      '{call}',
      [name('ledger'), enumerated('operation', outcomes('apply', 'resolve'))],
      'Ledger calls that failed with a store outcome of unknown (the entry may have been applied).',
    ),
    counter(
      'ledger_prechecks_total',
      'ledger.prechecks',
      '{check}',
      [name('ledger'), enumerated('outcome', PRE_CHECK)],
      'Ledger seen checks by outcome (skipped: the Bloom pre-check answered never seen, no store read).',
    ),
  ]),
  ...inRow('Idempotency', [
    counter(
      'idempotency_runs_total',
      'idempotency.runs',
      '{run}',
      [name('scope'), enumerated('outcome', IDEMPOTENCY)],
      'Idempotent runs by outcome.',
    ),
    counter(
      'idempotency_takeovers_total',
      'idempotency.takeovers',
      '{run}',
      [name('scope')],
      'Runs that took over another holder’s expired lease.',
    ),
    counter(
      'idempotency_leases_lost_total',
      'idempotency.leases_lost',
      '{run}',
      [name('scope')],
      'Runs that lost their lease while their function ran (another caller may run it too).',
    ),
    counter(
      'idempotency_prechecks_total',
      'idempotency.prechecks',
      '{check}',
      [name('scope'), enumerated('outcome', PRE_CHECK)],
      'Idempotency seen checks by outcome (skipped: the Bloom pre-check answered never seen, no store read).',
    ),
  ]),
  ...inRow('Limiter', [
    counter(
      'limiter_decisions_total',
      'limiter.decisions',
      '{decision}',
      [name('limiter'), enumerated('reason', REASONS)],
      'Limiter decisions by reason (blocked: the local block cache answered; degraded-*: the store failed).',
    ),
    counter(
      'limiter_degraded_total',
      'limiter.degraded',
      '{decision}',
      [name('limiter'), enumerated('policy', POLICIES)],
      'Takes the store failed or timed out for, answered by the degraded policy.',
    ),
    {
      ...histogram(
        'limiter_window_deviation_ratio',
        'limiter.window.deviation',
        '1',
        [name('limiter')],
        "Sampled sliding-window keys: the bucketed estimate minus the exact admitted cost; local-first keys: the node's view of the usage minus the store's at each lease. As a share of the limit.",
      ),
      buckets: DEVIATION_BUCKETS,
    },
    counter(
      'limiter_leases_total',
      'limiter.leases',
      '{lease}',
      [name('limiter'), enumerated('outcome', LEASE_OUTCOMES)],
      'Local-first shares: granted, refused (less than a share left), returned, expired (unused past their window), failed.',
    ),
    counter(
      'limiter_lease_points_total',
      'limiter.lease.points',
      '{point}',
      [name('limiter'), enumerated('outcome', LEASE_OUTCOMES)],
      'Points of local-first shares by outcome: granted minus returned minus expired is what the nodes admitted locally.',
    ),
  ]),
  ...inRow('Lookup guard', [
    counter(
      'guard_gets_total',
      'guard.gets',
      '{get}',
      [name('guard'), enumerated('outcome', GUARD_GET)],
      'Lookup guard gets by outcome (absent-*: answered null without the backend, in degraded mode).',
    ),
    counter(
      'guard_state_changes_total',
      'guard.state_changes',
      '{change}',
      [name('guard'), enumerated('state', GUARD_STATE)],
      'Lookup guard state changes, by the state entered (degraded: a null flood or a slow backend).',
    ),
  ]),
  ...inRow('Store', [
    histogram(
      'store_call_duration_seconds',
      'store.call.duration',
      's',
      [name('store'), name('op')],
      'Store contract calls by store kind and operation (op), on the monotonic clock.',
    ),
    counter(
      'store_errors_total',
      'store.errors',
      '{call}',
      [name('store'), name('op'), name('error')],
      'Failed store calls by store kind, operation and error code (or class name).',
    ),
  ]),
  ...inRow('Ordering', [
    counter(
      'reorder_pushes_total',
      'reorder.pushes',
      '{push}',
      [enumerated('outcome', PUSH)],
      'Reorder buffer pushes by outcome (late: behind a forced advance).',
    ),
    counter(
      'reorder_released_total',
      'reorder.released',
      '{item}',
      [],
      'Items the reorder buffers released in order.',
    ),
    gauge(
      'reorder_buffered',
      'reorder.buffered',
      '{item}',
      [],
      'Items held by the reorder buffer after its latest push.',
    ),
    gauge(
      'reorder_missing',
      'reorder.missing',
      '{item}',
      [],
      'Numbers the reorder buffer remembers as missing after its latest push.',
    ),
    counter(
      'reorder_forced_advances_total',
      'reorder.forced_advances',
      '{gap}',
      [enumerated('cause', GAP_CAUSE)],
      'Gaps given up on (forced advances) by cause.',
    ),
    counter(
      'reorder_skipped_total',
      'reorder.skipped',
      '{item}',
      [enumerated('cause', GAP_CAUSE)],
      'Sequence numbers skipped by forced advances, by cause.',
    ),
    gauge(
      'reorder_gap_timeout_seconds',
      'reorder.gap_timeout',
      's',
      [],
      'The adaptive gap timeout’s current value.',
    ),
    gauge(
      'compensator_backlog',
      'compensator.backlog',
      '{range}',
      [],
      'Ranges the compensator still has queued, waiting for a retry or in flight.',
    ),
    counter(
      'compensator_ranges_total',
      'compensator.ranges',
      '{range}',
      [enumerated('event', outcomes('queued', 'retried', 'filled', 'given-up'))],
      'Compensator ranges by event (queued, retried, filled, given-up).',
    ),
    counter(
      'version_gate_upserts_total',
      'version_gate.upserts',
      '{upsert}',
      [name('gate'), enumerated('outcome', GATE)],
      'Version gate upserts by outcome.',
    ),
    counter(
      'snowflake_clock_waits_total',
      'snowflake.clock_waits',
      '{wait}',
      [enumerated('cause', WAIT_CAUSE)],
      'Snowflake waits for the clock by cause (rollback within tolerance, sequence spent).',
    ),
    counter(
      'snowflake_clock_wait_seconds_total',
      'snowflake.clock_wait.time',
      's',
      [enumerated('cause', WAIT_CAUSE)],
      'Time snowflake generators spent waiting for the clock, by cause.',
    ),
    counter(
      'snowflake_rollbacks_refused_total',
      'snowflake.rollbacks_refused',
      '{rollback}',
      [],
      'Clock rollbacks beyond the tolerance: next() threw.',
    ),
  ]),
  ...inRow('Streams', [
    counter(
      'stream_published_total',
      'stream.published',
      '{event}',
      [enumerated('duplicate', BOOL)],
      'Events a stream producer published, by whether the dedup record answered (duplicate).',
    ),
    counter(
      'stream_publish_retries_total',
      'stream.publish.retries',
      '{attempt}',
      [],
      'Producer write attempts that failed and were retried.',
    ),
    counter(
      'stream_producer_dead_letters_total',
      'stream.producer.dead_letters',
      '{event}',
      [enumerated('reason', outcomes('publish-failed', 'terminal-error'))],
      'Events a producer gave up on, by reason.',
    ),
    counter(
      'stream_backlog_full_total',
      'stream.backlog_full',
      '{event}',
      [],
      'Publishes refused because the producer’s backlog was full.',
    ),
    counter(
      'stream_consumer_bookings_total',
      'stream.consumer.bookings',
      '{entry}',
      [enumerated('outcome', outcomes('applied', 'duplicate', 'stale'))],
      'Ledger bookings of a stream consumer by outcome.',
    ),
    counter(
      'stream_consumer_prechecks_total',
      'stream.consumer.prechecks',
      '{entry}',
      [enumerated('outcome', outcomes('skipped', 'read-seen', 'read-unseen', 'read-failed'))],
      'Pre-checks of entries with an event id (skipped: the Bloom filter answered never seen, no read; read-seen: acked without the handler; read-failed: the read threw, the handler ran).',
    ),
    counter(
      'stream_consumer_dead_letters_total',
      'stream.consumer.dead_letters',
      '{entry}',
      [enumerated('reason', outcomes('max-deliveries', 'terminal-error', 'ledger-stale', 'handler-error'))],
      'Entries a consumer dead-lettered, by reason.',
    ),
    counter(
      'stream_consumer_fenced_total',
      'stream.consumer.fenced',
      '{entry}',
      [],
      'Deliveries reclaimed or acked elsewhere: this consumer’s ack or effect was refused.',
    ),
    counter(
      'stream_consumer_handler_errors_total',
      'stream.consumer.handler_errors',
      '{entry}',
      [],
      'Handler failures (the entry is redelivered or dead-lettered).',
    ),
    counter(
      'stream_consumer_trimmed_pending_total',
      'stream.consumer.trimmed_pending',
      '{entry}',
      [],
      'Pending entries trimmed from the stream before anyone acked them.',
    ),
    counter(
      'stream_consumer_errors_total',
      'stream.consumer.errors',
      '{call}',
      [enumerated('operation', outcomes('read', 'ack', 'claim', 'touch', 'group', 'stats'))],
      'Failed Redis calls of a consumer, by operation (it goes on).',
    ),
    counter(
      'stream_consumer_delivered_total',
      'stream.consumer.delivered',
      '{entry}',
      [],
      'Entries handed to consumers’ handlers or ledger bookings (redeliveries and reclaims included).',
    ),
    counter(
      'stream_consumer_acked_total',
      'stream.consumer.acked',
      '{entry}',
      [],
      'Entries whose handler or booking ran and whose ack went through.',
    ),
    counter(
      'stream_consumer_reclaimed_total',
      'stream.consumer.reclaimed',
      '{entry}',
      [],
      'Idle pending entries a consumer took over (XAUTOCLAIM).',
    ),
    whole(
      gauge(
        'stream_consumer_pending',
        'stream.consumer.pending',
        '{entry}',
        [],
        'Entries delivered to the consumer group and not acked yet (its latest report).',
      ),
    ),
    whole(
      gauge(
        'stream_consumer_lag',
        'stream.consumer.lag',
        '{entry}',
        [],
        'Entries of the stream not delivered to the consumer group yet (NaN: Redis cannot tell).',
      ),
    ),
  ]),
  ...inRow('Gateway', [
    gauge(
      'gateway_connections',
      'gateway.connections',
      '{connection}',
      [],
      'Open gateway connections (past the handshake).',
    ),
    counter(
      'gateway_closes_total',
      'gateway.closes',
      '{connection}',
      [enumerated('code', CLOSE_CODES)],
      'Closed gateway connections by code (CLIENT: the client closed or the socket dropped).',
    ),
    counter(
      'gateway_resumes_total',
      'gateway.resumes',
      '{connection}',
      [enumerated('recovered', BOOL)],
      'Sessions continued by a reconnect, by whether everything after the offset was recovered.',
    ),
    counter(
      'gateway_messages_total',
      'gateway.messages',
      '{message}',
      [enumerated('outcome', outcomes('handled', 'limited', 'rejected')), enumerated('duplicate', BOOL)],
      'Client messages by outcome, and whether it was a re-send answered from the dedup window.',
    ),
    counter(
      'gateway_limit_decisions_total',
      'gateway.limit_decisions',
      '{decision}',
      [enumerated('reason', REASONS)],
      'Gateway limit decisions by reason (blocked: this node’s block cache answered, not the store).',
    ),
    counter(
      'gateway_heartbeat_timeouts_total',
      'gateway.heartbeat_timeouts',
      '{connection}',
      [],
      'Connections closed because the client missed its heartbeats (judged on this node’s clock).',
    ),
    counter(
      'gateway_heartbeat_spared_total',
      'gateway.heartbeat_spared',
      '{connection}',
      [],
      'False heartbeat timeouts suppressed: silent past the timeout only counting this node’s own stalls, then spoke.',
    ),
    counter(
      'gateway_heartbeat_stall_seconds_total',
      'gateway.heartbeat_stall',
      's',
      [enumerated('verdict', outcomes('dropped', 'spared'))],
      'This node’s own event-loop stalls discounted from judged connections’ silence, by verdict.',
    ),
    counter(
      'gateway_slow_consumer_closes_total',
      'gateway.slow_consumer_closes',
      '{connection}',
      [],
      'Connections closed because the client read slower than its send buffer allowed.',
    ),
    counter(
      'gateway_upgrades_refused_total',
      'gateway.upgrades_refused',
      '{request}',
      [enumerated('reason', outcomes('origin', 'path', 'request'))],
      'Upgrades refused before the WebSocket opened, by reason.',
    ),
  ]),
]);

/** A metric of {@link METRICS} by its name without prefix; throws on a name it does not hold. */
export function metricDefinition(metric: string): MetricDefinition {
  const found = METRICS.find((m) => m.name === metric);
  if (found === undefined) throw new Error(`no onceflow metric named ${metric}`);
  return found;
}
