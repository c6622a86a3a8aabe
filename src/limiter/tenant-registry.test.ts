import { describe, expect, it, vi } from 'vitest';
import { thrown } from '../../test/support/thrown.js';
import { FakeClock } from '../core/clock.js';
import { isOnceflowError } from '../core/errors.js';
import { escapeKeyPart } from '../core/key-part.js';
import type { OnceflowEvent } from '../core/observer.js';
import { namespaceTag } from '../redis/limiter-keys.js';
import { memoryStore } from '../store/memory/memory-store.js';
import { wrapStore } from '../testing/wrap-store.js';
import { tenantNamespace } from './keys.js';
import { createTenantRegistry, type TenantEvent } from './tenant-registry.js';

const HOSTILE = ['a', 'a:b', 'a%3Ab', '{x}', 'x}', '*', 'a*', '?', '[a]', 'a\\', '', ' ', 'ü', 'a}:b'].filter(
  Boolean,
);

describe('createTenantRegistry', () => {
  it('keeps tenants apart: hostile ids neither share counters nor reset each other', async () => {
    const clock = new FakeClock(0);
    const tenants = createTenantRegistry({ store: memoryStore({ clock }) });
    for (const t of HOSTILE)
      tenants.init(t, { algorithm: 'fixed-window', limit: 1, window: '1m', clock, blockCache: false });
    for (const t of HOSTILE) expect((await tenants.take(t, 'k')).allowed).toBe(true);
    for (const t of HOSTILE) expect((await tenants.take(t, 'k')).allowed).toBe(false);
    expect(await tenants.reset('a')).toBe(1);
    expect((await tenants.take('a', 'k')).allowed).toBe(true);
    for (const t of HOSTILE.filter((x) => x !== 'a'))
      expect((await tenants.take(t, 'k')).allowed).toBe(false);
    expect(await tenants.reset('*')).toBe(1);
    expect((await tenants.take('a*', 'k')).allowed).toBe(false);
  });

  it('reset also clears the degraded-local counters of that tenant in this process', async () => {
    const clock = new FakeClock(0);
    const base = memoryStore({ clock });
    // The store refuses every decision (down) but can still reset: the local limiter decides.
    const store = wrapStore(base, { limiterTake: () => Promise.reject(new Error('down')) });
    const tenants = createTenantRegistry({ store });
    const spec = {
      algorithm: 'fixed-window',
      limit: 4,
      window: '1m',
      clock,
      degraded: { mode: 'local', share: 0.5 },
    } as const;
    tenants.init('acme', spec);
    tenants.init('other', spec);
    const taken = async (t: string) => (await tenants.take(t, 'k')).allowed;
    expect([await taken('acme'), await taken('acme'), await taken('acme')]).toEqual([true, true, false]);
    expect([await taken('other'), await taken('other'), await taken('other')]).toEqual([true, true, false]);
    await tenants.reset('acme');
    expect(await taken('acme')).toBe(true);
    expect(await taken('other')).toBe(false);
  });

  it('escaping is injective and leaves no separator, brace or glob character', () => {
    const escaped = HOSTILE.map(escapeKeyPart);
    expect(new Set(escaped).size).toBe(HOSTILE.length);
    for (const e of escaped) expect(e).toMatch(/^[A-Za-z0-9_.%-]+$/);
    expect(escapeKeyPart('a:b')).toBe('a%3Ab');
    expect(escapeKeyPart('%3A')).toBe('%253A');
    for (const a of HOSTILE)
      for (const b of HOSTILE) {
        if (a === b) continue;
        // Another tenant's key never falls in a reset's match (`{<tag>:*`, `{<tag>}*`) on Redis.
        const key = `{${namespaceTag(tenantNamespace(b))}:k}:id:f1000`;
        const tag = namespaceTag(tenantNamespace(a));
        expect(key.startsWith(`{${tag}:`) || key.startsWith(`{${tag}}`)).toBe(false);
      }
  });

  it('emits lifecycle events; close makes every later use throw ERR_CLOSED', async () => {
    const tenants = createTenantRegistry();
    const events: TenantEvent['type'][] = [];
    const off = tenants.on((e) => events.push(e.type));
    tenants.init('acme', { algorithm: 'gcra', limit: 5, window: '1s' });
    tenants.init('acme', { algorithm: 'gcra', limit: 6, window: '1s' });
    await tenants.take('acme', 'u');
    await tenants.reset('acme');
    expect(tenants.tenants()).toEqual(['acme']);
    tenants.close('acme');
    expect(events).toEqual(['init', 'init', 'reset', 'close']);
    expect(tenants.tenants()).toEqual([]);
    const uses = [
      () => tenants.take('acme', 'u'),
      () => tenants.reset('acme'),
      () => tenants.init('acme', { algorithm: 'gcra', limit: 5, window: '1s' }),
      () => tenants.close('acme'),
    ];
    for (const use of uses) {
      let caught: unknown;
      try {
        await use();
      } catch (err) {
        caught = err;
      }
      expect(isOnceflowError(caught, 'ERR_CLOSED')).toBe(true);
    }
    off();
    tenants.init('other', { algorithm: 'gcra', limit: 5, window: '1s' });
    expect(events).toHaveLength(4);
  });

  it('an unknown tenant or a bad policy is an invalid argument', async () => {
    const tenants = createTenantRegistry();
    await expect(tenants.take('nobody', 'u')).rejects.toThrow(
      /`tenant` to be a tenant passed to init\(\) first/,
    );
    expect(() => tenants.init('t', null as never)).toThrow(/`policy`/);
    // Named as the argument's field, like `policy.store`, and typed as an invalid argument.
    const bad = thrown(() => tenants.init('t', { algorithm: 'gcra', limit: -1, window: '1s' }));
    expect(isOnceflowError(bad, 'ERR_INVALID_ARGUMENT')).toBe(true);
    expect(String(bad)).toMatch(/`policy.limit` to be .*got `-1`/);
    expect(
      String(thrown(() => tenants.init('t', { limits: [{ algorithm: 'gcra', limit: 0, window: '1s' }] }))),
    ).toMatch(/`policy.limits\[0\].limit`/);
    expect(() => tenants.init('', { algorithm: 'gcra', limit: 1, window: '1s' })).toThrow(/`tenant`/);
  });
});

describe('tenant registry listeners', () => {
  it('labels: the registry name for every tenant, <name>/<tenant> only for the labeled set', async () => {
    const seen: string[] = [];
    const observer = (e: OnceflowEvent) => {
      if (e.part === 'limiter' && e.type === 'decision') seen.push(e.limiter);
    };
    const tenants = createTenantRegistry({ name: 'api', labeledTenants: ['acme'] });
    for (const t of ['acme', 'small-1', 'small-2'])
      tenants.init(t, { algorithm: 'gcra', limit: 5, window: '1s', observer });
    for (const t of ['acme', 'small-1', 'small-2']) await tenants.take(t, 'k');
    expect(seen).toEqual(['api/acme', 'api', 'api']);
    const plain: string[] = [];
    const registry = createTenantRegistry();
    registry.init('x', {
      algorithm: 'gcra',
      limit: 5,
      window: '1s',
      observer: (e) => e.part === 'limiter' && e.type === 'decision' && plain.push(e.limiter),
    });
    await registry.take('x', 'k');
    expect(plain).toEqual(['tenants']);
  });

  it('refuses an unbounded or malformed labeled set, and a bad name', () => {
    const many = Array.from({ length: 101 }, (_, i) => `t${i}`);
    expect(thrown(() => createTenantRegistry({ labeledTenants: many }))).toMatchObject({
      code: 'ERR_INVALID_OPTION',
      option: 'labeledTenants',
    });
    expect(thrown(() => createTenantRegistry({ labeledTenants: ['a', ''] }))).toMatchObject({
      code: 'ERR_INVALID_OPTION',
      option: 'labeledTenants[1]',
    });
    expect(thrown(() => createTenantRegistry({ name: '' }))).toMatchObject({ option: 'name' });
    expect(thrown(() => createTenantRegistry({ labeledTenant: ['a'] } as never))).toMatchObject({
      message: expect.stringContaining('did you mean `labeledTenants`'),
    });
  });

  it("a policy's own store or name is refused by name, not dropped", () => {
    const tenants = createTenantRegistry({ store: memoryStore() });
    const policy = { algorithm: 'gcra', limit: 1, window: '1s' } as const;
    expect(() => tenants.init('acme', { ...policy, store: memoryStore() } as never)).toThrow(
      /`policy.store` to be absent/,
    );
    expect(() => tenants.init('acme', { ...policy, name: 'other' } as never)).toThrow(
      /`policy.name` to be absent/,
    );
    expect(tenants.tenants()).toEqual([]);
  });

  it('a listener that throws breaks nothing: the decision and the close stand, its error is rethrown on a microtask', async () => {
    const rethrown: (() => void)[] = [];
    vi.stubGlobal('queueMicrotask', (fn: () => void) => rethrown.push(fn));
    try {
      const failing = {
        kind: 'down',
        limiterTake: () => Promise.reject(new Error('down')),
        limiterReset: async () => 0,
      };
      const tenants = createTenantRegistry({ store: failing as never });
      tenants.on(() => {
        throw new Error('listener bug');
      });
      tenants.init('acme', {
        algorithm: 'gcra',
        limit: 1,
        window: '1s',
        degraded: 'deny',
        blockCache: false,
      });
      expect(await tenants.take('acme', 'u')).toMatchObject({ allowed: false, reason: 'degraded-deny' });
      expect(() => tenants.close('acme')).not.toThrow();
      expect(tenants.tenants()).toEqual([]);
      expect(rethrown.length).toBe(3); // init, degraded, close
      for (const fn of rethrown) expect(fn).toThrow('listener bug');
    } finally {
      vi.unstubAllGlobals();
    }
  });
});
