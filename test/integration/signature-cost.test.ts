// What long signatures cost ledger-apply.lua, in Redis server time (INFO commandstats), on a
// redis-server of this test's own: the shared one counts other clients' scripts too, and the
// quadratic search this guards against would hold it for seconds.
import { rmSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger, LIMITS } from '../../src/index.js';
import { evalScript } from '../../src/redis/eval.js';
import { createRedisStore, scripts } from '../../src/redis/index.js';
import { type StartedRedis, startRedis } from '../support/redis-servers.js';

/** The server's script totals (EVALSHA and EVAL) since it started. */
async function scriptStats(client: Redis): Promise<{ calls: number; usec: number }> {
  const info = await client.info('commandstats');
  let calls = 0;
  let usec = 0;
  for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+),usec=(\d+)/g)) {
    calls += Number(m[1]);
    usec += Number(m[2]);
  }
  return { calls, usec };
}

/** Redis µs of the one script call `fn` makes. */
async function serverTime(client: Redis, fn: () => Promise<unknown>): Promise<number> {
  const before = await scriptStats(client);
  await fn();
  const after = await scriptStats(client);
  expect(after.calls - before.calls).toBe(1);
  return after.usec - before.usec;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

describe('ledger-apply.lua: the duplicate check is linear in the window, whatever the signatures share', () => {
  let server: StartedRedis;
  let client: Redis;
  beforeAll(async () => {
    server = await startRedis();
    client = new Redis(server.port, '127.0.0.1');
  });
  afterAll(async () => {
    client.disconnect();
    await server.stop();
    rmSync(server.dir, { recursive: true, force: true });
  });

  it('a full window of the largest signatures the ledger takes, sharing all but 4 bytes: < 5 ms per apply', async () => {
    // 256 x 1 KB: a 256 KB window, searched in full by every apply. A search for the bare
    // signature tries each of an entry's positions with a compare running the shared prefix: ~7 ms
    // per apply here (scripts/signature-cost.mjs --capacity 256 --script <a script searching so>,
    // its header shows how to get one), where the delimited search reads each byte about once
    // (~1.5 ms).
    const capacity = 256;
    const ledger = createLedger({ store: createRedisStore({ client, prefix: 'cost:' }), capacity });
    const head = 'x'.repeat(LIMITS.signatureBytes - 4);
    const signature = (i: number) => head + String(i).padStart(4, '0');
    for (let i = 0; i < capacity; i++) {
      await ledger.apply({ owner: 'p', signature: signature(i), deltas: { coins: 1 } });
    }
    const applied: number[] = [];
    const duplicates: number[] = [];
    for (let i = capacity; i < capacity + 15; i++) {
      applied.push(
        await serverTime(client, async () => {
          const r = await ledger.apply({ owner: 'p', signature: signature(i), deltas: { coins: 1 } });
          expect(r.outcome).toBe('applied');
        }),
      );
      // The newest again: found last, after every other entry was compared.
      duplicates.push(
        await serverTime(client, async () => {
          const r = await ledger.apply({ owner: 'p', signature: signature(i), deltas: { coins: 1 } });
          expect(r.outcome).toBe('duplicate');
        }),
      );
    }
    // The median: a 2-core machine shared with other work preempts a script now and then.
    expect(median(applied)).toBeLessThan(5000);
    expect(median(duplicates)).toBeLessThan(5000);
  });

  it("'x' x 256 KB, + '0', + '1' (past the ledger's bound, so the script is called directly): milliseconds, not a second", async () => {
    // This shape costs 833 ms-1.09 s of Redis time with a bare-signature search (quadratic: ~N^2
    // byte compares for the third), ~7 ms with the delimited one (linear;
    // scripts/signature-cost.mjs measures either). 100 ms is far from both.
    const base = 'x'.repeat(256 * 1024);
    const keys = ['direct:{p}:s', 'direct:{p}:j'];
    let call = 0;
    const apply = async (signature: string) => {
      const entry = [String(++call), signature, 4, '', 0, '', '', 1, 'coins', '1'];
      const reply = await evalScript(client, scripts.ledgerApply, keys, [JSON.stringify(entry), '', 'run']);
      return (JSON.parse(reply as string) as [string][])[0]?.[0];
    };
    await apply(base);
    await apply(`${base}0`);
    let outcome: string | undefined;
    const third = await serverTime(client, async () => {
      outcome = await apply(`${base}1`);
    });
    expect(outcome).toBe('applied');
    const again = await serverTime(client, async () => {
      outcome = await apply(`${base}1`);
    });
    expect(outcome).toBe('duplicate');
    expect(third).toBeLessThan(100_000);
    expect(again).toBeLessThan(100_000);
  });
});
