// An ioredis client with `keyPrefix` prepends it to every key argument it sends, but not to a SCAN
// MATCH pattern, and a SCAN answers the keys as stored (prefix included). The store reads the
// client's keyPrefix and gives the same answers as on a client without one, with every key it
// writes under the keyPrefix.
import { Cluster, Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createLimiter, createTenantRegistry } from '../../src/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import { conformance } from '../../src/testing/index.js';
import { keysMatching } from '../support/keys-matching.js';
import { prefixedTargets, runPrefix } from './redis-env.js';

const keyPrefix = runPrefix('key-prefix');

describe('a client with keyPrefix', () => {
  const targets = prefixedTargets(keyPrefix);

  for (const { name, client, raw } of targets) {
    it(`${name}: tenants.reset removes the tenant's keys, and the tenant is admitted again`, async () => {
      const store = createRedisStore({ client, prefix: `${name}-tenants:` });
      const tenants = createTenantRegistry({ store });
      tenants.init('acme', { algorithm: 'fixed-window', limit: 1, window: '1m', blockCache: false });
      expect((await tenants.take('acme', 'k')).allowed).toBe(true);
      expect((await tenants.take('acme', 'k')).allowed).toBe(false);
      expect(await keysMatching(raw, `${keyPrefix}${name}-tenants:*`)).toHaveLength(1);
      expect(await tenants.reset('acme')).toBe(1);
      expect(await keysMatching(raw, `${keyPrefix}${name}-tenants:*`)).toEqual([]);
      expect((await tenants.take('acme', 'k')).allowed).toBe(true);
    });

    it(`${name}: limiter.reset(key) removes the key's state`, async () => {
      const store = createRedisStore({ client, prefix: `${name}-reset:` });
      const limiter = createLimiter({
        store,
        algorithm: 'fixed-window',
        limit: 1,
        window: '1m',
        blockCache: false,
      });
      expect((await limiter.take('k')).allowed).toBe(true);
      expect((await limiter.take('k')).allowed).toBe(false);
      await limiter.reset('k');
      expect(await keysMatching(raw, `${keyPrefix}${name}-reset:*`)).toEqual([]);
      expect((await limiter.take('k')).allowed).toBe(true);
    });
  }

  // Every other operation names its keys as command arguments (or script KEYS), which the client
  // prefixes: the conformance cases pass on such a client, and nothing lands outside the keyPrefix.
  describe('conformance (standalone)', () => {
    const { client, raw } = targets[0] as (typeof targets)[number];
    const store = createRedisStore({ client, prefix: 'conf:' });
    const retention = (n: number) =>
      createRedisStore({ client, prefix: 'conf:', journal: { maxEntriesPerOwner: n } });
    for (const suite of conformance.suites) {
      if (suite.needs === 'outage') continue; // redis-conformance.test.ts cuts a proxy for these
      for (const c of suite.cases) {
        it(`${suite.name}: ${c.name}`, async () => {
          const result = await conformance.runCase(store, c, { prefix: 'c:', require: true, retention });
          expect(result.failures).toEqual([]);
        });
      }
    }
    it('writes no key outside the keyPrefix', async () => {
      expect(await keysMatching(raw, 'conf:*')).toEqual([]);
      expect((await keysMatching(raw, `${keyPrefix}conf:*`)).length).toBeGreaterThan(0);
    });
  });

  it('is refused up front when its keyPrefix would move the hash tag, or is not a string', () => {
    const braces = new Redis({ lazyConnect: true, keyPrefix: 'app{1}:' });
    const binary = new Redis({ lazyConnect: true, keyPrefix: Buffer.from('app:') as never });
    const split = new Cluster([{ host: '127.0.0.1', port: 1 }], {
      lazyConnect: true,
      keyPrefix: 'a:',
      redisOptions: { keyPrefix: 'b:' },
    });
    try {
      for (const c of [braces, binary]) {
        expect(() => createRedisStore({ client: c })).toThrow(
          expect.objectContaining({
            code: 'ERR_INVALID_OPTION',
            message: expect.stringMatching(/keyPrefix/),
          }),
        );
      }
      // A cluster whose nodes prefix keys otherwise than the cluster itself: a reset could not
      // name what its SCAN of a node found.
      expect(() => createRedisStore({ client: split })).toThrow(
        expect.objectContaining({ code: 'ERR_INVALID_OPTION', message: expect.stringMatching(/keyPrefix/) }),
      );
    } finally {
      for (const c of [braces, binary, split]) c.disconnect();
    }
  });
});
