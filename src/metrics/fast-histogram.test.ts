import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { STORE_CALL_BUCKETS } from './definitions.js';
import { FastHistogram } from './fast-histogram.js';

// Observations on every bound, between bounds, below the first and past the last.
const VALUES = [
  0,
  0.000001,
  ...STORE_CALL_BUCKETS,
  ...STORE_CALL_BUCKETS.map((b) => b * 1.5),
  3,
  1000,
  0.00042,
];

function pair() {
  const theirs = new Registry();
  const ours = new Registry();
  const reference = new Histogram({
    name: 'h',
    help: 'help text',
    labelNames: ['store', 'op'],
    buckets: [...STORE_CALL_BUCKETS],
    registers: [theirs],
  });
  const fast = new FastHistogram('h', 'help text', ['store', 'op'], STORE_CALL_BUCKETS);
  ours.registerMetric(fast as never);
  return { theirs, ours, reference, fast };
}

describe('FastHistogram', () => {
  it('writes the text and JSON a prom-client Histogram writes for the same observations', async () => {
    const { theirs, ours, reference, fast } = pair();
    const a = fast.series(['memory', 'ledgerApply']);
    const b = fast.series(['redis', 'limiterTake']);
    VALUES.forEach((v, i) => {
      a(v);
      reference.labels('memory', 'ledgerApply').observe(v);
      if (i % 3 === 0) {
        b(v);
        reference.labels('redis', 'limiterTake').observe(v);
      }
    });
    // A series resolved again is the same series.
    fast.series(['memory', 'ledgerApply'])(0.002);
    reference.labels('memory', 'ledgerApply').observe(0.002);
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());
  });

  it('writes no series before its first observation, and none after a reset', async () => {
    const { theirs, ours, reference, fast } = pair();
    const a = fast.series(['memory', 'close']);
    expect(await ours.metrics()).toBe(await theirs.metrics());
    a(0.1);
    reference.labels('memory', 'close').observe(0.1);
    expect(await ours.metrics()).toContain('h_count{store="memory",op="close"} 1');
    ours.resetMetrics();
    theirs.resetMetrics();
    expect(await ours.metrics()).toBe(await theirs.metrics());
    a(0.2);
    expect(await ours.metrics()).toContain('h_sum{store="memory",op="close"} 0.2');
  });
});
