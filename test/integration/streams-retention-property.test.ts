import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { trimStream } from '../../src/streams/retention.js';
import { checkTrimmedPast } from '../../src/streams/trimmed-past.js';
import { cleanupPrefix, clusterClient, REDIS_URL, runPrefix } from './redis-env.js';

const HOUR = 3_600_000;
const GROUPS = ['a', 'b', 'c'] as const;

type Op =
  | { kind: 'add'; old: boolean; n: number }
  | { kind: 'read'; group: number; consumer: number; n: number }
  | { kind: 'ack'; group: number; n: number }
  | { kind: 'claim'; group: number; consumer: number }
  | { kind: 'drain'; group: number; n: number }
  | { kind: 'trim'; approximate: boolean };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('add' as const), old: fc.boolean(), n: fc.integer({ min: 1, max: 5 }) }),
  fc.record({
    kind: fc.constant('read' as const),
    group: fc.integer({ min: 0, max: 2 }),
    consumer: fc.integer({ min: 0, max: 1 }),
    n: fc.integer({ min: 1, max: 4 }),
  }),
  fc.record({
    kind: fc.constant('ack' as const),
    group: fc.integer({ min: 0, max: 2 }),
    n: fc.integer({ min: 1, max: 4 }),
  }),
  fc.record({
    kind: fc.constant('claim' as const),
    group: fc.integer({ min: 0, max: 2 }),
    consumer: fc.integer({ min: 0, max: 1 }),
  }),
  fc.record({ kind: fc.constant('trim' as const), approximate: fc.boolean() }),
  // A group catching up: reads n and acknowledges everything it has pending. Without it, three
  // groups seldom all move past an old entry, and the trims would have nothing to trim.
  fc.record({
    kind: fc.constant('drain' as const),
    group: fc.integer({ min: 0, max: 2 }),
    n: fc.integer({ min: 1, max: 20 }),
  }),
  fc.record({
    kind: fc.constant('drain' as const),
    group: fc.integer({ min: 0, max: 2 }),
    n: fc.integer({ min: 1, max: 20 }),
  }),
);

// Random interleavings of adds (old and young), reads, acks, reclaims and trims over three
// groups: after every trim, every group's pending entries and every entry it has not been
// delivered yet are still in the stream, and no group is reported behind.
describe.each([
  'standalone',
  'cluster',
] as const)('trimStream never drops what a group needs (%s)', (mode) => {
  const client = mode === 'cluster' ? clusterClient() : new Redis(REDIS_URL);
  const prefix = runPrefix(`streams-retention-prop-${mode}`);
  let runs = 0;
  afterAll(async () => {
    await cleanupPrefix(client, prefix);
    client.disconnect();
  });

  it('under random interleavings of deliveries, acks, reclaims and trims', async () => {
    const [sec] = (await client.call('TIME')) as [string, string];
    const oldMs = Number(sec) * 1000 - 2 * HOUR;
    let trimmed = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 10, maxLength: 60, size: 'max' }), async (ops) => {
        const stream = `${prefix}{s${runs++}}`;
        let seq = 0;
        let youngMs = Number(sec) * 1000;
        await client.call('XADD', stream, `${oldMs}-${seq++}`, 'e', 'seed');
        for (const g of GROUPS) await client.call('XGROUP', 'CREATE', stream, g, '0');
        for (const o of ops) {
          if (o.kind === 'add') {
            for (let i = 0; i < o.n; i++) {
              const id = o.old ? `${oldMs}-${seq++}` : `${youngMs++}-0`;
              // An old id below the stream's top is refused by XADD: take the next free one then.
              await client
                .call('XADD', stream, id, 'e', 'x')
                .catch(() => client.call('XADD', stream, '*', 'e', 'x'));
            }
          } else if (o.kind === 'read') {
            await client.call(
              'XREADGROUP',
              'GROUP',
              GROUPS[o.group] as string,
              `c${o.consumer}`,
              'COUNT',
              o.n,
              'STREAMS',
              stream,
              '>',
            );
          } else if (o.kind === 'ack') {
            const pending = (await client.call(
              'XPENDING',
              stream,
              GROUPS[o.group] as string,
              '-',
              '+',
              o.n,
            )) as [string][];
            if (pending.length > 0)
              await client.call('XACK', stream, GROUPS[o.group] as string, ...pending.map((p) => p[0]));
          } else if (o.kind === 'drain') {
            const g = GROUPS[o.group] as string;
            await client.call('XREADGROUP', 'GROUP', g, 'c0', 'COUNT', o.n, 'STREAMS', stream, '>');
            const pending = (await client.call('XPENDING', stream, g, '-', '+', 10_000)) as [string][];
            if (pending.length > 0) await client.call('XACK', stream, g, ...pending.map((p) => p[0]));
          } else if (o.kind === 'claim') {
            await client.call(
              'XAUTOCLAIM',
              stream,
              GROUPS[o.group] as string,
              `c${o.consumer}`,
              0,
              '0-0',
              'COUNT',
              10,
            );
          } else {
            const needed = await neededIds(stream);
            trimmed += (
              await trimStream({ client, stream, maxAge: '1h', approximate: o.approximate, mode: 'floor' })
            ).trimmed;
            const left = new Set(
              ((await client.call('XRANGE', stream, '-', '+')) as [string][]).map((e) => e[0]),
            );
            for (const id of needed) expect(left.has(id), `${id} was needed and trimmed`).toBe(true);
            for (const g of GROUPS) expect((await checkTrimmedPast(client, stream, g)).behind).toBe(false);
          }
        }
      }),
      { numRuns: mode === 'cluster' ? 20 : 50 },
    );
    // The runs did trim: the property is not held by trimming nothing.
    expect(trimmed).toBeGreaterThan(0);
  });

  /** Every entry some group still needs: pending in it, or after its last-delivered-id. */
  async function neededIds(stream: string): Promise<string[]> {
    const all = ((await client.call('XRANGE', stream, '-', '+')) as [string][]).map((e) => e[0]);
    const needed = new Set<string>();
    const groups = (await client.call('XINFO', 'GROUPS', stream)) as string[][];
    for (const flat of groups) {
      const info = new Map<string, string>();
      for (let i = 0; i + 1 < flat.length; i += 2) info.set(String(flat[i]), String(flat[i + 1]));
      const name = info.get('name') as string;
      const last = info.get('last-delivered-id') as string;
      const pending = (await client.call('XPENDING', stream, name, '-', '+', 10_000)) as [string][];
      for (const p of pending) needed.add(p[0]);
      for (const id of all) if (after(id, last)) needed.add(id);
    }
    return [...needed];
  }
});

function after(a: string, b: string): boolean {
  const [am, as] = a.split('-').map(BigInt) as [bigint, bigint];
  const [bm, bs] = b.split('-').map(BigInt) as [bigint, bigint];
  return am > bm || (am === bm && as > bs);
}
