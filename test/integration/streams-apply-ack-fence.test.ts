// The fence of stream-apply-ack.lua reads the batch's pending entries with one XPENDING over its id
// range, and checks alone each entry that range did not return: a range cut short by its count
// (the consumer holds more entries in it than the count) must still book every entry still held,
// and an entry found in the range with another delivery count must still be fenced.
import { describe, expect, it } from 'vitest';
import { createLedger } from '../../src/ledger/ledger.js';
import { createRedisStore } from '../../src/redis/redis-store.js';
import type { Delivery } from '../../src/streams/delivery.js';
import { type ApplyAckItem, createLedgerPath } from '../../src/streams/ledger-path.js';
import { redisRun } from '../support/redis-run.js';

const { client, prefix } = redisRun('streams-apply-ack-fence');
let n = 0;

interface Payment {
  owner: string;
  amount: number;
}

// A stream of `count` entries, all read by consumer `c` of group `g` (each delivered once), and a
// ledger path of `c` whose fence range reads at most `maxHeld` pending entries.
async function setup(count: number, maxHeld: number) {
  const base = `${prefix}${n++}:`;
  const stream = `${base}{s}events`;
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    ids.push(
      (await client.call('XADD', stream, '*', 'e', JSON.stringify({ owner: `o${i}`, amount: 1 }))) as string,
    );
  }
  await client.call('XGROUP', 'CREATE', stream, 'g', '0');
  await client.call('XREADGROUP', 'GROUP', 'g', 'c', 'COUNT', count, 'STREAMS', stream, '>');
  const ledgerPrefix = `${base}ledger:`;
  const path = createLedgerPath<Payment>(
    {
      prefix: ledgerPrefix,
      capacity: 8,
      entry: (d) => ({ owner: d.event.owner, signature: d.id, deltas: { coins: d.event.amount } }),
    },
    client,
    client,
    stream,
    `${stream}:dead`,
    `${stream}:attempts`,
    'g',
    'c',
    maxHeld,
  );
  const ledger = createLedger({ store: createRedisStore({ client, prefix: ledgerPrefix }), capacity: 8 });
  const item = async (i: number, token: number): Promise<ApplyAckItem> => {
    const id = ids[i] as string;
    const delivery: Delivery<Payment> = {
      id,
      event: { owner: `o${i}`, amount: 1 },
      eventId: undefined,
      deliveries: token,
      fields: {},
      order: 0n,
    };
    const command = await path.command(delivery);
    if (command === undefined) throw new Error('no command');
    return { id, token, command };
  };
  const pending = async () =>
    ((await client.call('XPENDING', stream, 'g', '-', '+', 100)) as [string, string, number, number][]).map(
      (p) => p[0],
    );
  return { stream, ids, path, ledger, item, pending };
}

describe('stream-apply-ack fence (one XPENDING range per batch)', () => {
  it('books every held entry when the range is cut short by its count (the rest checked one by one)', async () => {
    // Five entries held, the range over entries 0..4 read at most 1: entries 2 and 4 are not in
    // its reply and must be checked alone, not refused.
    const s = await setup(5, 1);
    const replies = await s.path.applyAck([await s.item(4, 1), await s.item(0, 1), await s.item(2, 1)]);
    expect(replies.map((r) => r.outcome)).toEqual(['applied', 'applied', 'applied']);
    expect(await s.pending()).toEqual([s.ids[1], s.ids[3]]);
    for (const i of [0, 2, 4]) expect(await s.ledger.balances(`o${i}`)).toEqual({ coins: 1n });
    expect(await s.ledger.balances('o1')).toEqual({});
  });

  it('fences an entry found in the range with another delivery count, and one reclaimed by another consumer', async () => {
    const s = await setup(3, 100);
    // Entry 0 reclaimed by the same consumer (its delivery count is now 2: delivery 1 is not the
    // current one; the range finds it), entry 1 by another consumer (the range does not find it).
    await client.call('XCLAIM', s.stream, 'g', 'c', 0, s.ids[0] as string);
    await client.call('XCLAIM', s.stream, 'g', 'other', 0, s.ids[1] as string);
    const replies = await s.path.applyAck([await s.item(0, 1), await s.item(1, 1), await s.item(2, 1)]);
    expect(replies.map((r) => r.outcome)).toEqual(['fenced', 'fenced', 'applied']);
    expect(await s.pending()).toEqual([s.ids[0], s.ids[1]]);
    expect(await s.ledger.balances('o0')).toEqual({});
    expect(await s.ledger.balances('o1')).toEqual({});
    expect(await s.ledger.balances('o2')).toEqual({ coins: 1n });
    // The current delivery of entry 0 (token 2) books it.
    expect((await s.path.applyAck([await s.item(0, 2)])).map((r) => r.outcome)).toEqual(['applied']);
    expect(await s.ledger.balances('o0')).toEqual({ coins: 1n });
  });

  it('holds the entries of a run after one fenced (nothing booked or acked), acks one with nothing to book', async () => {
    // A key's run of three (entries 0, 1, 2: follows), its middle one reclaimed by another
    // consumer meanwhile: 0 is booked, 1 fenced, 2 held (it must not be booked before 1); entry 3
    // starts another run and has nothing to book (acked only).
    const s = await setup(4, 100);
    await client.call('XCLAIM', s.stream, 'g', 'other', 0, s.ids[1] as string);
    const replies = await s.path.applyAck([
      await s.item(0, 1),
      { ...(await s.item(1, 1)), follows: true },
      { ...(await s.item(2, 1)), follows: true },
      { id: s.ids[3] as string, token: 1, command: undefined },
    ]);
    expect(replies.map((r) => r.outcome)).toEqual(['applied', 'fenced', 'held', 'acked']);
    expect(await s.pending()).toEqual([s.ids[1], s.ids[2]]);
    expect(await s.ledger.balances('o0')).toEqual({ coins: 1n });
    expect(await s.ledger.balances('o2')).toEqual({});
    // Its next call (the run starting with it) books it once.
    expect((await s.path.applyAck([await s.item(2, 1)])).map((r) => r.outcome)).toEqual(['applied']);
    expect(await s.ledger.balances('o2')).toEqual({ coins: 1n });
  });
});
