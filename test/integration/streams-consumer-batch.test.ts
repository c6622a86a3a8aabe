// The consumer's batches: on the ledger path a read of `batch` entries is booked by one
// stream-apply-ack.lua call (not one per handler slot), a key's entries in one call still book in
// stream order, and an entry whose ledger entry cannot be made holds its key's later entries back;
// on the handler path `concurrency` still bounds the handlers running at once.
import { describe, expect, it } from 'vitest';
import { jsonSerializer } from '../../src/idempotency/serializer.js';
import { createLedger } from '../../src/ledger/ledger.js';
import { ownerKeys } from '../../src/redis/keys.js';
import { createRedisStore } from '../../src/redis/redis-store.js';
import { scripts } from '../../src/redis/scripts.generated.js';
import type { Delivery } from '../../src/streams/consumer.js';
import { startConsumer } from '../support/consumer-run.js';
import { redisRun } from '../support/redis-run.js';
import { pollUntil } from '../support/until.js';

const { client, prefix } = redisRun('streams-batch');
let n = 0;

interface Payment {
  owner: string;
  amount: number;
  /** The ledger entry function throws on the first delivery of this entry. */
  fail?: boolean;
}

async function publish(stream: string, events: Payment[]): Promise<string[]> {
  const pipeline = client.pipeline();
  for (const [i, e] of events.entries()) {
    pipeline.xadd(stream, '*', 'e', jsonSerializer.serialize(e), 'i', `ev-${i}`);
  }
  return ((await pipeline.exec()) ?? []).map(([, id]) => id as string);
}

// The client's stream-apply-ack calls (counted where they are sent: no other client's figures).
function countScripts(): { readonly calls: number; restore(): void } {
  const counter = { calls: 0 };
  const call = client.call.bind(client) as (...args: unknown[]) => Promise<unknown>;
  (client as { call: unknown }).call = (...args: unknown[]) => {
    if (args[0] === 'EVALSHA' && args[1] === scripts.streamApplyAck.sha1) counter.calls++;
    return call(...args);
  };
  return {
    get calls() {
      return counter.calls;
    },
    restore: () => {
      (client as { call: unknown }).call = call;
    },
  };
}

/** The one consumer of group `g` on `stream`, blocking 100ms per read. */
const reading = (stream: string) => ({ client, stream, group: 'g', consumer: 'c1', block: '100ms' }) as const;

const entry = (d: Delivery<Payment>) => {
  if (d.event.fail === true && d.deliveries === 1) throw new Error('not yet');
  return { owner: d.event.owner, signature: d.eventId as string, deltas: { coins: d.event.amount } };
};

describe('stream consumer batches', () => {
  it('ledger path: N entries read and booked in about N / batch script calls', async () => {
    const base = `${prefix}${n++}:`;
    const stream = `${base}{s}events`;
    const N = 1000;
    // Every entry its own key (no `key`): nothing waits for an earlier entry of its key.
    await publish(
      stream,
      Array.from({ length: N }, (_, i) => ({ owner: `o${i % 97}`, amount: 1 })),
    );
    const counted = countScripts();
    try {
      const run = startConsumer<Payment>({
        ...reading(stream),
        batch: 64,
        ledger: { capacity: 8, prefix: `${base}ledger:`, entry },
      });
      await pollUntil(() => run.consumer.stats.acked === N, 20_000, 10);
      await run.stop();
      // Each read of 64 is one call, or two when some of its runs hold an owner of the call in
      // flight (they wait for it in a call of their own: ledger-path.ts); a read cut short (the
      // stream's end, an event-loop turn that saw part of a read) adds at most a couple.
      expect(counted.calls).toBeGreaterThanOrEqual(Math.ceil(N / 64));
      expect(counted.calls).toBeLessThanOrEqual(2 * Math.ceil(N / 64) + 3);
    } finally {
      counted.restore();
    }
    const ledger = createLedger({
      store: createRedisStore({ client, prefix: `${base}ledger:` }),
      capacity: 8,
    });
    let total = 0n;
    for (let o = 0; o < 97; o++) total += (await ledger.balances(`o${o}`)).coins ?? 0n;
    expect(total).toBe(BigInt(N));
    expect(await client.call('XPENDING', stream, 'g')).toEqual([0, null, null, null]);
  });

  it("ledger path with `key`: a key's entries booked in one call keep stream order, also behind an entry that failed", async () => {
    const base = `${prefix}${n++}:`;
    const stream = `${base}{s}events`;
    const KEYS = 5;
    const PER_KEY = 40;
    // Round-robin over 5 keys: each read holds several entries of every key (runs of ~13), and
    // one entry of key k2, in the middle of its runs, fails on its first delivery: its key's
    // later entries wait for its redelivery (claimIdle) and are booked after it.
    const events: Payment[] = [];
    for (let i = 0; i < KEYS * PER_KEY; i++) {
      events.push({ owner: `k${i % KEYS}`, amount: 1, ...(i === 5 * 7 + 2 ? { fail: true } : {}) });
    }
    const ids = await publish(stream, events);
    const counted = countScripts();
    let run: ReturnType<typeof startConsumer<Payment>>;
    try {
      run = startConsumer<Payment>({
        ...reading(stream),
        claimIdle: '300ms',
        batch: 64,
        key: (d) => d.event.owner,
        ledger: { capacity: 8, prefix: `${base}ledger:`, entry },
      });
      await pollUntil(() => run.consumer.stats.acked === KEYS * PER_KEY, 20_000, 10);
      await run.stop();
    } finally {
      counted.restore();
    }
    // Far fewer calls than entries: a key's run is booked in one call.
    expect(counted.calls).toBeLessThan((KEYS * PER_KEY) / 4);
    expect(run.events.filter((e) => e.type === 'handler-error')).toHaveLength(1);
    // Each key's journal (its bookings in the order booked) is its entries in stream order.
    for (let k = 0; k < KEYS; k++) {
      const [, journal] = ownerKeys(`${base}ledger:`, 'default', `k${k}`);
      const rows = (await client.call('XRANGE', journal, '-', '+')) as [string, string[]][];
      const sigs = rows.map(([, f]) => f[f.indexOf('sig') + 1]);
      const expected = ids
        .map((_, i) => i)
        .filter((i) => i % KEYS === k)
        .map((i) => `ev-${i}`);
      expect(sigs).toEqual(expected);
    }
    expect(await client.call('XPENDING', stream, 'g')).toEqual([0, null, null, null]);
  });

  it('ledger path with a small batch: a key whose head failed never takes every place', async () => {
    // batch 2: 4 entries booked at once (two calls), 6 held at most, at most 4 of one key. The
    // hot key's head fails once and waits for its redelivery (claimIdle); its 20 newer entries
    // would fill every place if a key could hold them all, and the other keys' entries would then
    // wait for that redelivery too. They must be booked before it.
    const base = `${prefix}${n++}:`;
    const stream = `${base}{s}events`;
    const events: Payment[] = [{ owner: 'hot', amount: 1, fail: true }];
    for (let i = 0; i < 20; i++) events.push({ owner: 'hot', amount: 1 });
    for (let i = 0; i < 10; i++) events.push({ owner: `k${i}`, amount: 1 });
    await publish(stream, events);
    const run = startConsumer<Payment>({
      ...reading(stream),
      claimIdle: '2s',
      batch: 2,
      key: (d) => d.event.owner,
      ledger: { capacity: 8, prefix: `${base}ledger:`, entry },
    });
    await pollUntil(() => run.consumer.stats.acked === events.length, 30_000, 10);
    await run.stop();
    const applied = run.events.flatMap((e) => (e.type === 'applied' ? [e.id] : []));
    const ids = (await client.call('XRANGE', stream, '-', '+')) as [string, string[]][];
    const head = applied.indexOf((ids[0] as [string, string[]])[0]);
    expect(head).toBeGreaterThanOrEqual(10);
    for (const [id] of ids.slice(21)) expect(applied.indexOf(id)).toBeLessThan(head);
  });

  it('handler path: at most `concurrency` handlers run at once whatever the batch', async () => {
    const base = `${prefix}${n++}:`;
    const stream = `${base}{s}events`;
    const N = 300;
    await publish(
      stream,
      Array.from({ length: N }, (_, i) => ({ owner: `o${i}`, amount: 1 })),
    );
    let running = 0;
    let most = 0;
    let handled = 0;
    const run = startConsumer<Payment>({
      ...reading(stream),
      batch: 64,
      concurrency: 4,
      handler: async () => {
        running++;
        most = Math.max(most, running);
        await new Promise((resolve) => setTimeout(resolve, 1));
        running--;
        handled++;
      },
    });
    await pollUntil(() => run.consumer.stats.acked === N, 20_000, 10);
    await run.stop();
    expect(handled).toBe(N);
    expect(most).toBeLessThanOrEqual(4);
    // The bound is reached (a read holds far more entries than 4): the check above can fail.
    expect(most).toBe(4);
  });
});
