import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createKeyScheduler, type ScheduledJob } from '../../src/streams/key-scheduler.js';
import { compareIdText } from '../../src/streams/stream-id.js';

// One step of a consumer's life as the scheduler sees it. `pick` chooses among the candidates of
// the step (running entries, held entries, ids of the stream) by index modulo their number.
type Step =
  | { kind: 'deliver'; key: number }
  | { kind: 'reclaim'; pick: number }
  | { kind: 'take' }
  | { kind: 'complete'; pick: number }
  | { kind: 'fail'; pick: number }
  | { kind: 'drop'; pick: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('deliver' as const), key: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ kind: fc.constant('reclaim' as const), pick: fc.nat() }),
  fc.constant({ kind: 'take' as const }),
  fc.record({ kind: fc.constant('complete' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('fail' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('drop' as const), pick: fc.nat() }),
);

/**
 * The stream as the group sees it: every id with its key, and which are still pending (not
 * acked). A reclaim re-delivers a pending id, held here or not (a dead consumer's, which may be
 * older than anything held: ids `<n>-1` sit between the deliveries `<n>-0` and `<n+1>-0`).
 */
function run(concurrency: number, steps: readonly Step[]): void {
  const s = createKeyScheduler<null>(concurrency);
  const keyOf = new Map<string, string>();
  const pending: string[] = [];
  // Ids another consumer was delivered and died holding, one per delivery, older than the next.
  let clock = 0;
  let token = 0;

  const check = (started: ScheduledJob<null>[]) => {
    const held = [...s.jobs()];
    const runningKeys = held.filter((j) => j.state === 'running').map((j) => j.key);
    // At most one entry per key runs, and at most `concurrency` in all.
    expect(new Set(runningKeys).size).toBe(runningKeys.length);
    expect(runningKeys.length).toBeLessThanOrEqual(concurrency);
    expect(s.running).toBe(runningKeys.length);
    for (const job of started) {
      // No older entry of its key is held and waiting: a key runs in stream id order.
      const older = held.filter((j) => j.key === job.key && j !== job && compareIdText(j.id, job.id) < 0);
      expect(older).toEqual([]);
    }
  };

  for (const st of steps) {
    const running = [...s.jobs()].filter((j) => j.state === 'running');
    switch (st.kind) {
      case 'deliver': {
        clock++;
        const id = `${clock}-0`;
        const key = `k${st.key}`;
        keyOf.set(id, key);
        // A dead consumer's entry of the same key, just before it: reclaimable later.
        const ghost = `${clock - 1}-1`;
        keyOf.set(ghost, key);
        pending.push(ghost, id);
        s.offer(id, key, 1, null);
        break;
      }
      case 'reclaim': {
        if (pending.length === 0) break;
        const id = pending[st.pick % pending.length] as string;
        s.offer(id, keyOf.get(id) as string, ++token, null);
        break;
      }
      case 'take':
        check(s.take());
        break;
      case 'complete': {
        const job = running[st.pick % Math.max(1, running.length)];
        if (job === undefined) break;
        s.complete(job.id);
        pending.splice(pending.indexOf(job.id), 1);
        break;
      }
      case 'fail': {
        const job = running[st.pick % Math.max(1, running.length)];
        if (job !== undefined) s.fail(job.id);
        break;
      }
      case 'drop': {
        // Reclaimed by another consumer (or trimmed): this one forgets it; it stays pending.
        const held = [...s.jobs()];
        const job = held[st.pick % Math.max(1, held.length)];
        if (job !== undefined) s.drop(job.id);
        break;
      }
    }
    check([]);
  }

  // Liveness: the running entries end, every failed one is delivered again, and then everything
  // held runs to the end.
  for (const job of [...s.jobs()]) if (job.state === 'running') s.complete(job.id);
  for (let guard = 0; s.held > 0; guard++) {
    expect(guard).toBeLessThan(10_000);
    for (const job of [...s.jobs()]) if (job.state === 'failed') s.offer(job.id, job.key, ++token, null);
    const started = s.take();
    check(started);
    expect(started.length).toBeGreaterThan(0);
    for (const job of started) s.complete(job.id);
  }
  expect(s.running).toBe(0);
}

describe('key scheduler: per-key order under random deliveries, failures and reclaims', () => {
  it('never runs a key twice at once, never past an older held entry of it, and drains', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.array(step, { maxLength: 200 }), (c, steps) =>
        run(c, steps),
      ),
      { numRuns: 500 },
    );
  });

  it('keeps the starts of one key in id order when all its entries are held at once', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 2 }), fc.boolean()), { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1, max: 3 }),
        (entries, concurrency) => {
          const s = createKeyScheduler<null>(concurrency);
          // Offered in a shuffled order (reclaims arrive before newer reads): ids decide.
          const offered = entries.map(([key], i) => ({ id: `${i + 1}-0`, key: `k${key}` }));
          const shuffled = [...offered].sort((a, b) => ((a.id.length * 7 + b.key.length) % 3) - 1);
          for (const e of shuffled) s.offer(e.id, e.key, 1, null);
          const starts = new Map<string, string[]>();
          let failOnce = new Set(entries.flatMap(([, f], i) => (f ? [`${i + 1}-0`] : [])));
          while (s.held > 0) {
            for (const job of [...s.jobs()]) if (job.state === 'failed') s.offer(job.id, job.key, 2, null);
            for (const job of s.take()) {
              const list = starts.get(job.key) ?? [];
              list.push(job.id);
              starts.set(job.key, list);
              if (failOnce.has(job.id)) {
                failOnce = new Set([...failOnce].filter((x) => x !== job.id));
                s.fail(job.id);
              } else s.complete(job.id);
            }
          }
          for (const [key, ids] of starts) {
            // A failed entry is started again before anything newer of its key: no id goes back.
            const expected = offered.filter((e) => e.key === key).map((e) => e.id);
            const deduped = ids.filter((id, i) => ids[i - 1] !== id);
            expect(deduped).toEqual(expected);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
