import { Registry, register } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { StoreError } from '../core/errors.js';
import { createLedger } from '../ledger/ledger.js';
import { createLimiter } from '../limiter/limiter.js';
import { memoryStore } from '../store/memory/memory-store.js';
import { wrapStore } from '../testing/wrap-store.js';
import { METRICS } from './definitions.js';
import { createMetrics } from './prometheus.js';

/** The value of one sample line of the exposition, or undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('createMetrics (prom-client)', () => {
  it('counts ledger applies by outcome, with every outcome of a ledger at zero from its first event', async () => {
    const metrics = createMetrics();
    const ledger = createLedger({ capacity: 4, name: 'payouts', observer: metrics.observer });
    await ledger.apply({ owner: 'p1', signature: 's1', deltas: { coins: 5 } });
    await ledger.apply({ owner: 'p1', signature: 's1', deltas: { coins: 5 } });
    const text = await metrics.registry.metrics();
    const series = (outcome: string) =>
      `onceflow_ledger_applies_total{ledger="payouts",outcome="${outcome}"}`;
    expect([sample(text, series('applied')), sample(text, series('duplicate'))]).toEqual([1, 1]);
    expect([sample(text, series('stale')), sample(text, series('failed'))]).toEqual([0, 0]);
    // The owner never becomes a label.
    expect(text).not.toContain('p1');
  });

  it('registers every metric of the table, under the prefix, in a registry of its own by default', async () => {
    const metrics = createMetrics({ prefix: 'app_' });
    expect(metrics.registry).toBeInstanceOf(Registry);
    expect(metrics.registry).not.toBe(register);
    const names = metrics.registry.getMetricsAsArray().map((m) => m.name);
    expect(names.sort()).toEqual(METRICS.map((d) => `app_${d.name}`).sort());
    expect(register.getSingleMetric('app_ledger_applies_total')).toBeUndefined();
    // A metric of enumerated labels shows each series at zero before anything happened.
    const text = await metrics.registry.metrics();
    expect(sample(text, 'app_gateway_closes_total{code="HEARTBEAT_TIMEOUT"}')).toBe(0);
    expect(sample(text, 'app_gateway_connections')).toBe(0);
  });

  it('counts every event across scrapes, in the text and the JSON export alike', async () => {
    const metrics = createMetrics();
    const ledger = createLedger({ capacity: 4, store: memoryStore(), name: 'l', observer: metrics.observer });
    const applied = 'onceflow_ledger_applies_total{ledger="l",outcome="applied"}';
    const duplicate = 'onceflow_ledger_applies_total{ledger="l",outcome="duplicate"}';
    await ledger.apply({ owner: 'p', signature: 's1', deltas: { coins: 1 } });
    await ledger.apply({ owner: 'p', signature: 's1', deltas: { coins: 1 } });
    let text = await metrics.registry.metrics();
    expect([sample(text, applied), sample(text, duplicate)]).toEqual([1, 1]);
    await ledger.apply({ owner: 'p', signature: 's2', deltas: { coins: 1 } });
    await ledger.apply({ owner: 'p', signature: 's3', deltas: { coins: 1 } });
    const json = await metrics.registry.getMetricsAsJSON();
    const applies = json.find((m) => m.name === 'onceflow_ledger_applies_total')?.values ?? [];
    expect(applies.find((v) => v.labels.ledger === 'l' && v.labels.outcome === 'applied')?.value).toBe(3);
    text = await metrics.registry.metrics();
    expect([sample(text, applied), sample(text, duplicate)]).toEqual([3, 1]);
  });

  it('times store calls by store and operation, and counts failures by error code', async () => {
    const metrics = createMetrics();
    const failing = wrapStore(memoryStore(), {
      limiterTake: () => Promise.reject(new StoreError('limiterTake', new Error('down'))),
    });
    const ledger = createLedger({ capacity: 4, store: metrics.observeStore(memoryStore()) });
    await ledger.apply({ owner: 'p', signature: 's', deltas: { coins: 1 } });
    const limiter = createLimiter({
      name: 'api',
      store: metrics.observeStore(failing),
      degraded: 'allow',
      algorithm: 'gcra',
      limit: 4,
      window: '1s',
      observer: metrics.observer,
    });
    expect((await limiter.take('u')).reason).toBe('degraded-allow');
    const text = await metrics.registry.metrics();
    expect(sample(text, 'onceflow_store_call_duration_seconds_count{store="memory",op="ledgerApply"}')).toBe(
      1,
    );
    expect(text).toMatch(/onceflow_store_errors_total\{store="[^"]+",op="limiterTake",error="ERR_STORE"\} 1/);
    expect(sample(text, 'onceflow_limiter_degraded_total{limiter="api",policy="allow"}')).toBe(1);
    expect(sample(text, 'onceflow_limiter_decisions_total{limiter="api",reason="degraded-allow"}')).toBe(1);
  });

  it("histograms a sampled sliding-window key's deviation, (estimate - exact) / limit, on its own buckets", async () => {
    const metrics = createMetrics();
    const deviation = (estimate: number, exact: number) =>
      metrics.observer({
        part: 'limiter',
        type: 'deviation',
        limiter: 'api',
        limit: 'l',
        max: 100,
        estimate,
        exact,
      });
    deviation(100, 100);
    deviation(90, 100);
    deviation(130, 100);
    const text = await metrics.registry.metrics();
    const bucket = (le: string) =>
      sample(text, `onceflow_limiter_window_deviation_ratio_bucket{le="${le}",limiter="api"}`);
    expect([
      bucket('-0.2'),
      bucket('-0.1'),
      bucket('0'),
      bucket('0.2'),
      bucket('0.5'),
      bucket('+Inf'),
    ]).toEqual([0, 1, 2, 2, 3, 3]);
    expect(sample(text, 'onceflow_limiter_window_deviation_ratio_count{limiter="api"}')).toBe(3);
  });

  it('keeps at most maxLabelValues values of a configured name, folding the rest into other', async () => {
    const metrics = createMetrics({ maxLabelValues: 3 });
    for (let i = 0; i < 10; i++) {
      metrics.observer({
        part: 'limiter',
        type: 'decision',
        limiter: `l${i}`,
        allowed: true,
        reason: 'allowed',
      });
    }
    const text = await metrics.registry.metrics();
    const limiters = new Set(
      [...text.matchAll(/onceflow_limiter_decisions_total\{limiter="([^"]+)"/g)].map((m) => m[1]),
    );
    expect([...limiters].sort()).toEqual(['l0', 'l1', 'l2', 'other']);
    expect(sample(text, 'onceflow_limiter_decisions_total{limiter="other",reason="allowed"}')).toBe(7);
  });

  it('counts every repeat of a series, kept, folded into other or cut short alike', async () => {
    const metrics = createMetrics({ maxLabelValues: 2 });
    const long = 'x'.repeat(80);
    for (let round = 0; round < 3; round++) {
      for (const limiter of ['a', 'b', 'c', 'd', long]) {
        metrics.observer({ part: 'limiter', type: 'decision', limiter, allowed: true, reason: 'allowed' });
      }
      metrics.observer({ part: 'ledger', type: 'apply', ledger: 'a', outcome: 'applied', owner: 'o' });
    }
    const text = await metrics.registry.metrics();
    expect(sample(text, 'onceflow_limiter_decisions_total{limiter="a",reason="allowed"}')).toBe(3);
    expect(sample(text, 'onceflow_limiter_decisions_total{limiter="b",reason="allowed"}')).toBe(3);
    expect(sample(text, 'onceflow_limiter_decisions_total{limiter="other",reason="allowed"}')).toBe(9);
    expect(sample(text, 'onceflow_ledger_applies_total{ledger="a",outcome="applied"}')).toBe(3);
    const cut = createMetrics({ maxLabelValues: 5 });
    for (let round = 0; round < 3; round++) {
      cut.observer({ part: 'limiter', type: 'decision', limiter: long, allowed: true, reason: 'allowed' });
    }
    const cutText = await cut.registry.metrics();
    expect(
      sample(cutText, `onceflow_limiter_decisions_total{limiter="${'x'.repeat(64)}",reason="allowed"}`),
    ).toBe(3);
  });

  it('bounds a label at 100 values by default, and an error code never becomes a new series past it', async () => {
    const metrics = createMetrics();
    for (let i = 0; i < 250; i++) {
      metrics.observer({
        part: 'store',
        type: 'call',
        store: 'redis',
        operation: 'ledgerApply',
        durationMs: 1,
        error: `E${i}`,
      });
    }
    const errors =
      (await metrics.registry.getSingleMetric('onceflow_store_errors_total')?.get())?.values ?? [];
    expect(errors.length).toBe(101);
    expect(errors.find((v) => v.labels.error === 'other')?.value).toBe(150);
  });

  it('follows gateway connections: opened, resumed, closed by code; a close before open does not count down', async () => {
    const metrics = createMetrics();
    const on = metrics.observer;
    on({ part: 'gateway', type: 'state', connection: 1, state: 'handshake' });
    on({ part: 'gateway', type: 'state', connection: 1, state: 'open', continued: false, recovered: false });
    on({ part: 'gateway', type: 'state', connection: 2, state: 'open', continued: true, recovered: false });
    on({ part: 'gateway', type: 'state', connection: 3, state: 'open', continued: true, recovered: true });
    on({ part: 'gateway', type: 'state', connection: 4, state: 'closed', code: 'AUTH_FAILED' });
    on({ part: 'gateway', type: 'state', connection: 1, state: 'closed', code: 'HEARTBEAT_TIMEOUT' });
    on({ part: 'gateway', type: 'state', connection: 2, state: 'closed', code: 'SLOW_CONSUMER' });
    on({ part: 'gateway', type: 'message', connection: 3, outcome: 'handled', duplicate: true });
    on({ part: 'gateway', type: 'refused', reason: 'origin', status: 403 });
    const text = await metrics.registry.metrics();
    expect({
      open: sample(text, 'onceflow_gateway_connections'),
      recovered: sample(text, 'onceflow_gateway_resumes_total{recovered="true"}'),
      lost: sample(text, 'onceflow_gateway_resumes_total{recovered="false"}'),
      auth: sample(text, 'onceflow_gateway_closes_total{code="AUTH_FAILED"}'),
      heartbeat: sample(text, 'onceflow_gateway_heartbeat_timeouts_total'),
      slow: sample(text, 'onceflow_gateway_slow_consumer_closes_total'),
      messages: sample(text, 'onceflow_gateway_messages_total{outcome="handled",duplicate="true"}'),
      refused: sample(text, 'onceflow_gateway_upgrades_refused_total{reason="origin"}'),
    }).toEqual({ open: 1, recovered: 1, lost: 1, auth: 1, heartbeat: 1, slow: 1, messages: 1, refused: 1 });
  });

  it('counts heartbeat verdicts (a drop only by its close) and the gateway limits by reason, all at zero first', async () => {
    const metrics = createMetrics();
    const before = await metrics.registry.metrics();
    expect([
      sample(before, 'onceflow_gateway_heartbeat_spared_total'),
      sample(before, 'onceflow_gateway_heartbeat_stall_seconds_total{verdict="spared"}'),
      sample(before, 'onceflow_gateway_limit_decisions_total{reason="blocked"}'),
    ]).toEqual([0, 0, 0]);
    const on = metrics.observer;
    on({ part: 'gateway', type: 'heartbeat', connection: 1, verdict: 'spared', stalledMs: 2000 });
    on({ part: 'gateway', type: 'heartbeat', connection: 2, verdict: 'spared', stalledMs: 500 });
    on({ part: 'gateway', type: 'heartbeat', connection: 3, verdict: 'dropped', stalledMs: 250 });
    on({ part: 'gateway', type: 'state', connection: 3, state: 'closed', code: 'HEARTBEAT_TIMEOUT' });
    on({ part: 'gateway', type: 'limit', connection: 1, reason: 'allowed' });
    on({ part: 'gateway', type: 'limit', connection: 1, reason: 'limited' });
    on({ part: 'gateway', type: 'limit', connection: 1, reason: 'blocked' });
    on({ part: 'gateway', type: 'limit', connection: 1, reason: 'blocked' });
    const text = await metrics.registry.metrics();
    const stall = (v: string) =>
      sample(text, `onceflow_gateway_heartbeat_stall_seconds_total{verdict="${v}"}`);
    const limit = (r: string) => sample(text, `onceflow_gateway_limit_decisions_total{reason="${r}"}`);
    expect({
      spared: sample(text, 'onceflow_gateway_heartbeat_spared_total'),
      timeouts: sample(text, 'onceflow_gateway_heartbeat_timeouts_total'),
      sparedStall: stall('spared'),
      droppedStall: stall('dropped'),
      allowed: limit('allowed'),
      limited: limit('limited'),
      blocked: limit('blocked'),
    }).toEqual({
      spared: 2,
      timeouts: 1,
      sparedStall: 2.5,
      droppedStall: 0.25,
      allowed: 1,
      limited: 1,
      blocked: 2,
    });
  });

  it('counts stream producer and consumer events', async () => {
    const metrics = createMetrics();
    metrics.observer({
      part: 'stream-producer',
      type: 'published',
      id: 'a',
      entryId: '1-0',
      duplicate: false,
    });
    metrics.observer({
      part: 'stream-producer',
      type: 'published',
      id: 'a',
      entryId: '1-0',
      duplicate: true,
    });
    metrics.observer({
      part: 'stream-producer',
      type: 'dead-lettered',
      id: 'b',
      reason: 'publish-failed',
      attempts: 3,
      deadLetterId: undefined,
    });
    metrics.observer({
      part: 'stream-consumer',
      type: 'applied',
      id: '1-0',
      outcome: 'duplicate',
      seq: undefined,
    });
    metrics.observer({ part: 'stream-consumer', type: 'deleted', ids: ['1-0', '2-0'] });
    metrics.observer({
      part: 'stream-consumer',
      type: 'dead-letter',
      id: '3-0',
      reason: 'ledger-stale',
      deliveries: 1,
    });
    const text = await metrics.registry.metrics();
    expect({
      written: sample(text, 'onceflow_stream_published_total{duplicate="false"}'),
      deduplicated: sample(text, 'onceflow_stream_published_total{duplicate="true"}'),
      dead: sample(text, 'onceflow_stream_producer_dead_letters_total{reason="publish-failed"}'),
      booked: sample(text, 'onceflow_stream_consumer_bookings_total{outcome="duplicate"}'),
      trimmed: sample(text, 'onceflow_stream_consumer_trimmed_pending_total'),
      stale: sample(text, 'onceflow_stream_consumer_dead_letters_total{reason="ledger-stale"}'),
    }).toEqual({ written: 1, deduplicated: 1, dead: 1, booked: 1, trimmed: 2, stale: 1 });
  });

  it('counts consumer deliveries, acks and reclaims, and sets the group backlog from the latest report', async () => {
    const metrics = createMetrics();
    const before = await metrics.registry.metrics();
    // Present from the start: a panel shows 0, not "no data", before a consumer reports.
    expect(sample(before, 'onceflow_stream_consumer_delivered_total')).toBe(0);
    expect(sample(before, 'onceflow_stream_consumer_pending')).toBe(0);
    metrics.observer({ part: 'stream-consumer', type: 'delivered', count: 5 });
    metrics.observer({ part: 'stream-consumer', type: 'delivered', count: 2 });
    metrics.observer({ part: 'stream-consumer', type: 'acked', count: 4 });
    metrics.observer({ part: 'stream-consumer', type: 'reclaimed', count: 2 });
    metrics.observer({ part: 'stream-consumer', type: 'lag', pending: 9, lag: 40 });
    metrics.observer({ part: 'stream-consumer', type: 'lag', pending: 3, lag: 12 });
    metrics.observer({ part: 'stream-consumer', type: 'error', operation: 'stats', error: new Error('x') });
    const text = await metrics.registry.metrics();
    expect({
      delivered: sample(text, 'onceflow_stream_consumer_delivered_total'),
      acked: sample(text, 'onceflow_stream_consumer_acked_total'),
      reclaimed: sample(text, 'onceflow_stream_consumer_reclaimed_total'),
      pending: sample(text, 'onceflow_stream_consumer_pending'),
      lag: sample(text, 'onceflow_stream_consumer_lag'),
      failed: sample(text, 'onceflow_stream_consumer_errors_total{operation="stats"}'),
    }).toEqual({ delivered: 7, acked: 4, reclaimed: 2, pending: 3, lag: 12, failed: 1 });
    // A lag Redis cannot tell is NaN, not the last figure nor 0 (which would read as caught up).
    metrics.observer({ part: 'stream-consumer', type: 'lag', pending: 0, lag: undefined });
    const unknown = await metrics.registry.metrics();
    expect(sample(unknown, 'onceflow_stream_consumer_pending')).toBe(0);
    expect(sample(unknown, 'onceflow_stream_consumer_lag')).toBeNaN();
  });

  it('sets ordering gauges from the latest event', async () => {
    const metrics = createMetrics();
    metrics.observer({
      part: 'reorder',
      type: 'push',
      outcome: 'buffered',
      released: 0,
      buffered: 3,
      missing: 2,
    });
    metrics.observer({ part: 'reorder', type: 'gap', from: 4, to: 6, cause: 'timeout' });
    metrics.observer({ part: 'adaptive-timeout', type: 'timeout', timeoutMs: 250 });
    metrics.observer({
      part: 'compensator',
      type: 'give-up',
      from: 4,
      to: 6,
      backlog: 1,
      error: new Error('x'),
    });
    const text = await metrics.registry.metrics();
    expect({
      buffered: sample(text, 'onceflow_reorder_buffered'),
      missing: sample(text, 'onceflow_reorder_missing'),
      skipped: sample(text, 'onceflow_reorder_skipped_total{cause="timeout"}'),
      timeout: sample(text, 'onceflow_reorder_gap_timeout_seconds'),
      backlog: sample(text, 'onceflow_compensator_backlog'),
      gaveUp: sample(text, 'onceflow_compensator_ranges_total{event="given-up"}'),
    }).toEqual({ buffered: 3, missing: 2, skipped: 3, timeout: 0.25, backlog: 1, gaveUp: 1 });
  });

  it('refuses bad options with a typed error, and a registry that has its metrics already, unchanged', () => {
    expect(() => createMetrics({ prefx: 'a_' } as never)).toThrow(/did you mean `prefix`/);
    expect(() => createMetrics({ prefix: 'bad-prefix' })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_OPTION', option: 'prefix' }),
    );
    expect(() => createMetrics({ maxLabelValues: 0 })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_OPTION', option: 'maxLabelValues' }),
    );
    expect(() => createMetrics({ registry: {} as never })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_OPTION', option: 'registry' }),
    );
    const registry = new Registry();
    createMetrics({ registry });
    const before = registry.getMetricsAsArray().length;
    expect(() => createMetrics({ registry })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_OPTION', option: 'registry' }),
    );
    expect(registry.getMetricsAsArray().length).toBe(before);
    // Another prefix shares the registry.
    expect(() => createMetrics({ registry, prefix: 'node2_' })).not.toThrow();
  });
});
