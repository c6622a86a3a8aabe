// The ledger path's calls of one owner reach Redis in the order they are numbered: ledger-book.lua
// answers `duplicate` (booking nothing) to a call below its run's last call for the owner, so an
// earlier call arriving after a later one would be acked unbooked. Here the earlier call's EVALSHA
// is answered NOSCRIPT by a server of the test's own (its script cache flushed), another process
// loads the script, and the later call (sent meanwhile when nothing orders them) runs first; the
// earlier one, sent again as EVAL, must still be booked.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger } from '../../src/ledger/ledger.js';
import type { RedisLike } from '../../src/redis/eval.js';
import { createRedisStore } from '../../src/redis/redis-store.js';
import { scripts } from '../../src/redis/scripts.generated.js';
import type { Delivery } from '../../src/streams/delivery.js';
import { type ApplyAckItem, createLedgerPath } from '../../src/streams/ledger-path.js';
import { type StartedRedis, startRedis } from '../../src/testing/redis-servers.js';
import { runPrefix } from './redis-env.js';

interface Payment {
  owner: string;
  amount: number;
}

let server: StartedRedis;
let raw: Redis;
const prefix = runPrefix('streams-ledger-order');
let n = 0;

beforeAll(async () => {
  server = await startRedis();
  raw = new Redis(`redis://127.0.0.1:${server.port}`);
});

afterAll(async () => {
  raw.disconnect();
  await server.remove();
});

/**
 * A client over `raw` that, once armed, delays the stream-apply-ack EVALSHAs after the first one:
 * when the first is answered NOSCRIPT, the script is loaded (as another process would) and a
 * second call already sent (`overtook`) runs before the NOSCRIPT reaches the caller.
 */
function reorderingClient() {
  let armed = false;
  let seen = 0;
  let overtook = false;
  let decided!: () => void;
  const gate = new Promise<void>((resolve) => (decided = resolve));
  let secondDone: Promise<unknown> = Promise.resolve();
  const client: RedisLike = {
    async call(command, ...args) {
      if (!armed || command !== 'EVALSHA' || args[0] !== scripts.streamApplyAck.sha1) {
        return raw.call(command, ...args);
      }
      seen++;
      if (seen === 1) {
        try {
          return await raw.call(command, ...args);
        } catch (err) {
          if (err instanceof Error && err.message.startsWith('NOSCRIPT')) {
            await raw.call('SCRIPT', 'LOAD', scripts.streamApplyAck.text);
            overtook = seen > 1;
            decided();
            await secondDone.catch(() => undefined);
          } else decided();
          throw err;
        }
      }
      const done = gate.then(() => raw.call(command, ...args));
      if (seen === 2) secondDone = done;
      return done;
    },
  };
  return {
    client,
    arm: () => {
      armed = true;
    },
    overtook: () => overtook,
  };
}

// A stream whose entries (one per owner in `owners`) are all delivered once to consumer `c`, and
// its ledger path over a reordering client.
async function setup(owners: readonly string[]) {
  const base = `${prefix}${n++}:`;
  const stream = `${base}{s}events`;
  const ids: string[] = [];
  for (const owner of owners) {
    ids.push((await raw.call('XADD', stream, '*', 'e', JSON.stringify({ owner, amount: 1 }))) as string);
  }
  await raw.call('XGROUP', 'CREATE', stream, 'g', '0');
  await raw.call('XREADGROUP', 'GROUP', 'g', 'c', 'COUNT', owners.length, 'STREAMS', stream, '>');
  const ledgerPrefix = `${base}ledger:`;
  const reorder = reorderingClient();
  const path = createLedgerPath<Payment>(
    {
      prefix: ledgerPrefix,
      capacity: 8,
      entry: (d) => ({ owner: d.event.owner, signature: d.id, deltas: { coins: d.event.amount } }),
    },
    reorder.client,
    raw,
    stream,
    `${stream}:dead`,
    `${stream}:attempts`,
    'g',
    'c',
    64,
  );
  const items: ApplyAckItem[] = [];
  for (const [i, owner] of owners.entries()) {
    const id = ids[i] as string;
    const delivery: Delivery<Payment> = {
      id,
      event: { owner, amount: 1 },
      eventId: undefined,
      deliveries: 1,
      fields: {},
      order: 0n,
    };
    items.push({ id, token: 1, command: await path.command(delivery) });
  }
  const ledger = createLedger({
    store: createRedisStore({ client: raw, prefix: ledgerPrefix }),
    capacity: 8,
  });
  const pending = async () => ((await raw.call('XPENDING', stream, 'g', '-', '+', 100)) as unknown[]).length;
  return { path, items, ledger, pending, reorder };
}

describe('streams ledger path: per-owner call order', () => {
  it('books an earlier call of an owner whose EVALSHA got NOSCRIPT while a later call of it was in flight', async () => {
    const s = await setup(['o', 'o', 'o']);
    const [first, a, b] = s.items as [ApplyAckItem, ApplyAckItem, ApplyAckItem];
    // A first call registers the owner (no SADD before the next calls) and leaves its run's mark.
    expect((await s.path.applyAck([first])).map((r) => r.outcome)).toEqual(['applied']);
    await raw.call('SCRIPT', 'FLUSH');
    s.reorder.arm();
    const replies = await Promise.all([s.path.applyAck([a]), s.path.applyAck([b])]);
    expect(replies.map((r) => r.map((x) => x.outcome))).toEqual([['applied'], ['applied']]);
    expect(await s.ledger.balances('o')).toEqual({ coins: 3n });
    expect(await s.pending()).toBe(0);
  });

  it('sends calls of other owners while one is in flight, and chains calls that share owners', async () => {
    const s = await setup(['p', 'q', 'p', 'q']);
    const [p1, q1, p2, q2] = s.items as [ApplyAckItem, ApplyAckItem, ApplyAckItem, ApplyAckItem];
    await raw.call('SCRIPT', 'FLUSH');
    s.reorder.arm();
    // p1 is in flight (NOSCRIPT, then EVAL) when q1 is sent: q1 holds no owner of p1's.
    const replies = await Promise.all([
      s.path.applyAck([p1]),
      s.path.applyAck([q1]),
      s.path.applyAck([p2, q2]),
    ]);
    expect(s.reorder.overtook()).toBe(true);
    expect(replies.map((r) => r.map((x) => x.outcome))).toEqual([
      ['applied'],
      ['applied'],
      ['applied', 'applied'],
    ]);
    expect(await s.ledger.balances('p')).toEqual({ coins: 2n });
    expect(await s.ledger.balances('q')).toEqual({ coins: 2n });
    expect(await s.pending()).toBe(0);
  });

  it('sends at once the runs of a batch whose owners are free, the others once their owner is', async () => {
    const s = await setup(['o', 'o', 'r', 'o']);
    const [first, a, r, b] = s.items as [ApplyAckItem, ApplyAckItem, ApplyAckItem, ApplyAckItem];
    expect((await s.path.applyAck([first])).map((x) => x.outcome)).toEqual(['applied']);
    await raw.call('SCRIPT', 'FLUSH');
    s.reorder.arm();
    // r's run goes while a is in flight; b's waits for a (o's calls in order).
    const replies = await Promise.all([s.path.applyAck([a]), s.path.applyAck([b, r])]);
    expect(s.reorder.overtook()).toBe(true);
    expect(replies.map((x) => x.map((y) => y.outcome))).toEqual([['applied'], ['applied', 'applied']]);
    expect(await s.ledger.balances('o')).toEqual({ coins: 3n });
    expect(await s.ledger.balances('r')).toEqual({ coins: 1n });
    expect(await s.pending()).toBe(0);
  });
});
