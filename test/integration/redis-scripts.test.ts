import { rmSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createLedger, memoryStore } from '../../src/index.js';
import { createRedisStore, escapeId, scripts } from '../../src/redis/index.js';
import { startRedis } from '../../src/testing/redis-servers.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

describe('Lua scripts', () => {
  const client = new Redis(REDIS_URL);
  const prefix = runPrefix('scripts');
  afterAll(async () => {
    await cleanupPrefix(client, prefix);
    client.disconnect();
  });

  it("each script's sha1 is the one Redis computes in SCRIPT LOAD", async () => {
    for (const script of Object.values(scripts)) {
      expect(await client.script('LOAD', script.text)).toBe(script.sha1);
    }
  });

  it('recovers from NOSCRIPT (SCRIPT FLUSH) by EVAL, without applying twice', async () => {
    // SCRIPT FLUSH empties the cache of every client of a server: on a server of this test's own,
    // never the shared one.
    const server = await startRedis();
    const own = new Redis({ port: server.port, host: '127.0.0.1' });
    try {
      const ledger = createLedger({ store: createRedisStore({ client: own, prefix }), capacity: 4 });
      await own.script('FLUSH');
      expect((await ledger.apply({ owner: 'p', signature: 'a', deltas: { coins: 5 } })).outcome).toBe(
        'applied',
      );
      await own.script('FLUSH');
      expect((await ledger.apply({ owner: 'p', signature: 'a', deltas: { coins: 5 } })).outcome).toBe(
        'duplicate',
      );
      expect(await ledger.balances('p')).toEqual({ coins: 5n });
      // EVAL cached the script again: the next EVALSHA finds it.
      expect(await own.script('EXISTS', scripts.ledgerApply.sha1)).toEqual([1]);
    } finally {
      own.disconnect();
      await server.stop();
      rmSync(server.dir, { recursive: true, force: true });
    }
  });

  it('escapes ids so that no owner can reach another owner’s keys or move the hash tag', async () => {
    expect(escapeId('a:b')).toBe('a%3Ab');
    expect(escapeId('{x}')).toBe('%7Bx%7D');
    expect(escapeId('%7B')).toBe('%257B');
    expect(() => escapeId(5 as never)).toThrow(/`id`/);
    const ledger = createLedger({ store: createRedisStore({ client, prefix }), capacity: 4, name: 'n' });
    for (const owner of ['a', 'a:b', '{a}', '%7Ba%7D', 'a}:w', '*']) {
      await ledger.apply({ owner, signature: 's', deltas: { coins: 1 } });
    }
    for (const owner of ['a', 'a:b', '{a}', '%7Ba%7D', 'a}:w', '*']) {
      expect(await ledger.balances(owner)).toEqual({ coins: 1n });
    }
  });

  it('a batch carries any well-formed string exactly (JSON in, JSON out), and one bad call spoils no other', async () => {
    const ledger = createLedger({ store: createRedisStore({ client, prefix }), capacity: 4, name: 'odd' });
    // NUL, quotes, backslash, slash, line separators, a surrogate pair, bytes cjson escapes or passes raw.
    const odd = ['\u0000', '"', '\\', '/', '\u2028\u2029', '😀', 'é\n\t', '[]', '{}', '1e3', '-0'];
    const calls = odd.map((text, i) =>
      ledger.apply({
        owner: `o${text}`,
        signature: `s${text}`,
        deltas: { [`f${text}`]: i + 1 },
        scope: `r${text}`,
      }),
    );
    // In the same turn (so in the same batch), a lone surrogate is refused before it is queued.
    const bad = ledger.apply({ owner: 'o\ud800', signature: 's', deltas: { coins: 1 } });
    await expect(bad).rejects.toThrow(/well-formed/);
    const results = await Promise.all(calls);
    for (const [i, text] of odd.entries()) {
      expect(results[i]).toEqual({ outcome: 'applied', balances: { [`f${text}`]: BigInt(i + 1) }, seq: 1 });
      expect(await ledger.window(`o${text}`)).toEqual({ signatures: [`s${text}`] });
      expect(await ledger.totals(`r${text}`)).toEqual({ [`f${text}`]: BigInt(i + 1) });
      const [entry] = await ledger.journal({ owner: `o${text}` });
      expect(entry).toMatchObject({
        signature: `s${text}`,
        scope: `r${text}`,
        deltas: { [`f${text}`]: BigInt(i + 1) },
      });
    }
  });

  it('ledger-apply called directly with what the store never sends (an empty signature, capacity 0) answers, never hangs the server', async () => {
    // A direct EVALSHA bypasses the store's checks. An empty signature once looped forever in the
    // duplicate search, and capacity 0 failed half-way through its batch.
    // On a server of this test's own: a script that hung would be killed there (SCRIPT KILL stops
    // whatever script a server runs, another test's on a shared one).
    const server = await startRedis();
    const timed = new Redis({
      port: server.port,
      host: '127.0.0.1',
      commandTimeout: 3000,
      maxRetriesPerRequest: 0,
    });
    const keys = [`${prefix}{direct}:s`, `${prefix}{direct}:j`];
    let call = 0;
    const apply = async (signature: string, capacity: number) => {
      const entry = [String(++call), signature, capacity, '', 1, '', '', 1, 'coins', '5'];
      const reply = await timed.evalsha(
        scripts.ledgerApply.sha1,
        2,
        ...keys,
        JSON.stringify(entry),
        '0',
        'run',
      );
      return (JSON.parse(reply as string) as [string][])[0]?.[0];
    };
    try {
      await timed.script('LOAD', scripts.ledgerApply.text);
      const outcomes = [
        await apply('a', 2),
        await apply('', 2),
        await apply('', 2),
        await apply('b', 0),
        await apply('b', 0),
      ];
      expect(outcomes).toEqual(['applied', 'applied', 'duplicate', 'applied', 'duplicate']);
    } finally {
      timed.disconnect();
      await server.stop();
      rmSync(server.dir, { recursive: true, force: true });
    }
  });

  it('the journal keeps the apply order across owners of one batch, as the memory store does', async () => {
    const owners = ['z', 'a', 'm', 'b', 'y'];
    const journals = [];
    for (const store of [createRedisStore({ client, prefix }), memoryStore()]) {
      const ledger = createLedger({ store, capacity: 4, name: 'order' });
      // One turn of the event loop: one batch on Redis, one TIME for all of it.
      await Promise.all(owners.map((owner) => ledger.apply({ owner, signature: 's', deltas: { coins: 1 } })));
      journals.push((await ledger.journal()).map((e) => e.owner));
    }
    expect(journals[0]).toEqual(owners);
    expect(journals[1]).toEqual(owners);
  });

  it('rejects a prefix that would move the hash tag', () => {
    expect(() => createRedisStore({ client, prefix: 'x{' })).toThrow(/`prefix`/);
    expect(() => createRedisStore({ client: {} as never })).toThrow(/`client`/);
  });

  it('wraps driver errors in ERR_STORE with the cause', async () => {
    const broken = createRedisStore({
      client: { call: async () => Promise.reject(new Error('connection is closed')) },
      prefix,
    });
    const ledger = createLedger({ store: broken, capacity: 4 });
    await expect(ledger.apply({ owner: 'p', signature: 'a', deltas: {} })).rejects.toMatchObject({
      code: 'ERR_STORE',
      cause: { message: 'connection is closed' },
    });
  });
});
