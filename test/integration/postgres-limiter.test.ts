// The Postgres limiter on a real PostgreSQL: exactness under concurrent connections, commands
// refused before any SQL, takes past their deadline never charged, deletes ordered after the
// takes sent before them, and clean-up of expired rows.
import type pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type PgPoolLike } from '../../src/postgres/index.js';
import type { LimitCall, LimiterTakeCommand } from '../../src/store/limiter.js';
import { specSuffix } from '../../src/windows/limits/algorithms.js';
import type { LimitSpec } from '../../src/windows/limits/types.js';
import { dropSchema, runSchema, testPool } from './pg-env.js';

const SPECS: Record<string, LimitSpec> = {
  'fixed-window': { id: 'f', algorithm: 'fixed-window', limit: 40, windowMs: 1000, param: 0 },
  'sliding-window': { id: 'w', algorithm: 'sliding-window', limit: 40, windowMs: 1000, param: 250 },
  gcra: { id: 'g', algorithm: 'gcra', limit: 40, windowMs: 1000, param: 40 },
  'sliding-log': { id: 'd', algorithm: 'sliding-log', limit: 40, windowMs: 1000, param: 0 },
};
// The rows' keys, written out: a take through the semantic contract must write the very rows the
// limiter's own key strings named (a database written before keeps its meaning). Each key remembers
// the namespace and subject it stands for, so a test can name a limit by its row.
const named = new Map<string, { namespace: string; subject: string; spec: LimitSpec }>();
const keyOf = (ns: string, subject: string, spec: LimitSpec) => {
  const key = `{|l:${ns}:${subject}}:${spec.id}:${specSuffix(spec)}`;
  named.set(key, { namespace: `|l:${ns}`, subject, spec });
  return key;
};
type ByKey = { spec: LimitSpec; key: string };
const callsOf = (limits: readonly ByKey[]): { namespace: string; limits: LimitCall[] } => ({
  namespace: named.get((limits[0] as ByKey).key)?.namespace as string,
  limits: limits.map(({ spec, key }) => ({ spec, subject: named.get(key)?.subject as string })),
});
const commandOf = (c: { limits: ByKey[]; cost: number; now?: number; timeoutMs?: number | undefined }) => ({
  ...c,
  ...callsOf(c.limits),
});

describe('Postgres limiter', () => {
  const pool = testPool(8);
  const schema = runSchema('lim');
  const store = createPostgresStore({ pool, schema });
  const take = (c: Parameters<typeof commandOf>[0]) => Promise.resolve(store.limiterTake(commandOf(c)));
  const del = (keys: string[]) =>
    store.limiterDelete(callsOf(keys.map((key) => ({ spec: named.get(key)?.spec as LimitSpec, key }))));
  const q = (text: string, values?: unknown[]) => pool.query(text, values);
  afterAll(async () => {
    await dropSchema(pool, schema);
    await pool.end();
  });

  for (const [algorithm, spec] of Object.entries(SPECS)) {
    it(`${algorithm}: 8 connections on one key admit exactly the limit per window, never more`, async () => {
      const key = keyOf(`hammer-${algorithm}`, 'one', spec);
      const base = 3_600_000_000;
      for (let w = 0; w < 3; w++) {
        // Two windows apart: every algorithm is back to full, so each burst admits exactly `limit`.
        const now = base + w * 2 * spec.windowMs;
        const replies = await Promise.all(
          Array.from({ length: 200 }, () => take({ limits: [{ spec, key }], cost: 1, now })),
        );
        expect(replies.filter((r) => r.allowed).length).toBe(spec.limit);
        const after = await take({ limits: [{ spec, key }], cost: 0, now });
        expect(after.verdicts[0]?.remaining).toBe(0);
      }
    });
  }

  it('on the database clock too: a sliding log admits exactly its limit from 8 connections', async () => {
    const spec: LimitSpec = { id: 'm', algorithm: 'sliding-log', limit: 64, windowMs: 3_600_000, param: 0 };
    const key = keyOf('hammer-db-clock', 'one', spec);
    const replies = await Promise.all(
      Array.from({ length: 400 }, () => take({ limits: [{ spec, key }], cost: 1 })),
    );
    expect(replies.filter((r) => r.allowed).length).toBe(64);
  });

  it('multi-limit takes naming shared keys in opposite orders neither deadlock nor overcharge', async () => {
    const a: LimitSpec = { id: 'a', algorithm: 'fixed-window', limit: 30, windowMs: 60_000, param: 0 };
    const b: LimitSpec = { id: 'b', algorithm: 'gcra', limit: 1000, windowMs: 60_000, param: 1000 };
    const ka = keyOf('cross', 's', a);
    const kb = keyOf('cross', 's', b);
    const now = 7_200_000_000;
    const started = performance.now();
    const replies = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        take({
          limits:
            i % 2 === 0
              ? [
                  { spec: a, key: ka },
                  { spec: b, key: kb },
                ]
              : [
                  { spec: b, key: kb },
                  { spec: a, key: ka },
                ],
          cost: 1,
          now,
        }),
      ),
    );
    // A deadlock would cost PostgreSQL's deadlock_timeout (1 s) before one side is rolled back.
    expect(performance.now() - started).toBeLessThan(1000);
    expect(replies.filter((r) => r.allowed).length).toBe(30);
    // All or nothing: `b` was charged exactly as often as `a` admitted.
    const peek = await take({ limits: [{ spec: b, key: kb }], cost: 0, now });
    expect(peek.verdicts[0]?.remaining).toBe(1000 - 30);
  });

  it('refuses malformed commands with InvalidArgumentError before any SQL', async () => {
    let touched = 0;
    const offline: PgPoolLike = {
      connect: async () => {
        touched++;
        throw new Error('must not connect');
      },
      query: async () => {
        touched++;
        throw new Error('must not query');
      },
    };
    const s = createPostgresStore({ pool: offline, schema, migrate: false });
    const spec = SPECS['fixed-window'] as LimitSpec;
    const call = (subject: string): LimitCall => ({ spec, subject });
    const namespace = '|l:bad';
    const bad: [string, LimiterTakeCommand][] = [
      ['cost', { namespace, limits: [call('k')], cost: -1, now: 0 }],
      ['cost', { namespace, limits: [call('k')], cost: 1.5, now: 0 }],
      ['cost', { namespace, limits: [call('k')], cost: Number.NaN, now: 0 }],
      ['now', { namespace, limits: [call('k')], cost: 1, now: 2 ** 52 }],
      ['now', { namespace, limits: [call('k')], cost: 1, now: -1 }],
      [
        'limits[0].spec.limit',
        { namespace, limits: [{ spec: { ...spec, limit: 0 }, subject: 'k' }], cost: 1 },
      ],
      [
        'limits[0].spec.algorithm',
        { namespace, limits: [{ spec: { ...spec, algorithm: 'leaky' as 'gcra' }, subject: 'k' }], cost: 1 },
      ],
      ['limits[0].subject', { namespace, limits: [call('a\u0000b')], cost: 1 }],
      ['limits[0].subject', { namespace, limits: [call('lone \ud800')], cost: 1 }],
      ['limits[0].subject', { namespace, limits: [call('x'.repeat(2601))], cost: 1 }],
      ['limits[0].subject', { namespace, limits: [{ spec, subject: 7 as unknown as string }], cost: 1 }],
      ['limits[1]', { namespace, limits: [call('same'), call('same')], cost: 1 }],
      ['limits', { namespace, limits: 'k' as unknown as LimitCall[], cost: 1 }],
      ['namespace', { namespace: 'ns\u0000', limits: [call('k')], cost: 1 }],
    ];
    for (const [path, command] of bad) {
      const pending = s.limiterTake(command) as Promise<unknown>; // a promise, never a throw
      await expect(pending).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT', path });
    }
    await expect(
      s.limiterDelete({ namespace, limits: [call('ok'), call('no\ud800')] }),
    ).rejects.toMatchObject({ path: 'limits[1].subject' });
    await expect(s.limiterReset('ns\u0000')).rejects.toMatchObject({ path: 'namespace' });
    expect(touched).toBe(0);
  });

  it('a take that reaches its deadline while waiting for a lock charges nothing; without a deadline it is charged', async () => {
    const spec: LimitSpec = { id: 'f', algorithm: 'fixed-window', limit: 10, windowMs: 3_600_000, param: 0 };
    const now = 3_600_000 * 5000;
    const holdRow = async (key: string, ms: number) => {
      const client: pg.PoolClient = await pool.connect();
      await client.query('BEGIN');
      await client.query(`SELECT 1 FROM "${schema}".limiter_state WHERE key = $1 FOR UPDATE`, [key]);
      return {
        client,
        release: () =>
          new Promise<void>((r) => setTimeout(r, ms)).then(async () => {
            await client.query('COMMIT');
            client.release();
          }),
      };
    };
    for (const timeoutMs of [100, undefined]) {
      const key = keyOf('deadline', String(timeoutMs), spec);
      await take({ limits: [{ spec, key }], cost: 1, now });
      const { release } = await holdRow(key, 400);
      const started = performance.now();
      const pendingTake = take({ limits: [{ spec, key }], cost: 3, now, timeoutMs });
      const released = release();
      const outcome = await pendingTake.then(
        (r) => ({ ok: true as const, r, at: performance.now() - started }),
        (err: unknown) => ({ ok: false as const, err, at: performance.now() - started }),
      );
      await released;
      const peek = await take({ limits: [{ spec, key }], cost: 0, now });
      if (timeoutMs === undefined) {
        expect(outcome.ok).toBe(true);
        expect(peek.verdicts[0]?.remaining).toBe(6);
      } else {
        expect(outcome).toMatchObject({ ok: false, err: { code: 'ERR_STORE', outcome: 'not-applied' } });
        // Refused only once the lock was released (the statement had to finish): after the fence.
        expect(outcome.at).toBeGreaterThanOrEqual(timeoutMs);
        expect(peek.verdicts[0]?.remaining).toBe(9);
      }
    }
  });

  it('a take on a new key past its deadline leaves no row behind', async () => {
    const spec: LimitSpec = { id: 'n', algorithm: 'gcra', limit: 5, windowMs: 1000, param: 5 };
    const key = keyOf('deadline-new', 'x', spec);
    // Another transaction holds the new key's row uncommitted: the take waits on its insert.
    const client = await pool.connect();
    await client.query('BEGIN');
    await client.query(
      `INSERT INTO "${schema}".limiter_state (key, code, expires_at, sweep_at) VALUES ($1, '', 0, 0)`,
      [key],
    );
    // Observed at once: the take may reject as soon as the lock is released, before the ROLLBACK's
    // own reply is read.
    const pendingTake = take({ limits: [{ spec, key }], cost: 1, now: 1_000_000, timeoutMs: 50 }).then(
      () => 'decided',
      (err: unknown) => err,
    );
    await new Promise((r) => setTimeout(r, 200));
    await client.query('ROLLBACK');
    client.release();
    expect(await pendingTake).toMatchObject({ code: 'ERR_STORE' });
    const rows = await q(`SELECT count(*)::int AS n FROM "${schema}".limiter_state WHERE key = $1`, [key]);
    expect(rows.rows[0].n).toBe(0);
  });

  it('a refused or cost-0 take on new keys writes no row (delete counts none)', async () => {
    const spec = SPECS['sliding-log'] as LimitSpec;
    const other = SPECS.gcra as LimitSpec;
    const k1 = keyOf('no-row', 'a', spec);
    const k2 = keyOf('no-row', 'a', other);
    await take({ limits: [{ spec, key: k1 }], cost: 0, now: 5000 });
    await take({
      limits: [
        { spec, key: k1 },
        { spec: other, key: k2 },
      ],
      cost: 41,
      now: 5000,
    });
    const rows = await q(`SELECT count(*)::int AS n FROM "${schema}".limiter_state WHERE key = ANY($1)`, [
      [k1, k2],
    ]);
    expect(rows.rows[0].n).toBe(0);
    expect(await del([k1, k2])).toBe(0);
  });

  it('limiterDelete runs after the takes called before it, and before those called after', async () => {
    const spec = SPECS['fixed-window'] as LimitSpec;
    for (let i = 0; i < 20; i++) {
      const key = keyOf('order', `s${i}`, spec);
      const before = take({ limits: [{ spec, key }], cost: 2, now: 1000 });
      const deleted = del([key]);
      const after = take({ limits: [{ spec, key }], cost: 0, now: 1000 });
      expect((await before).allowed).toBe(true);
      expect(await deleted).toBe(1);
      expect((await after).verdicts[0]?.remaining).toBe(40);
    }
  });

  it('cleanup deletes at most `limit` expired rows, and only expired ones', async () => {
    const spec: LimitSpec = { id: 'c', algorithm: 'gcra', limit: 1, windowMs: 10, param: 1 };
    const long: LimitSpec = { id: 'c', algorithm: 'gcra', limit: 1, windowMs: 3_600_000, param: 1 };
    await q(`DELETE FROM "${schema}".limiter_state`);
    // On the database clock a row is kept 1 s past its expiry (STATE_SLACK_MS).
    for (let i = 0; i < 5; i++)
      await take({ limits: [{ spec, key: keyOf('clean', `e${i}`, spec) }], cost: 1 });
    await take({ limits: [{ spec: long, key: keyOf('clean', 'live', long) }], cost: 1 });
    expect((await store.cleanup({ limit: 2 })).limiter).toBe(0);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await store.cleanup({ limit: 2 })).limiter).toBe(2);
    expect((await store.cleanup({ limit: 10 })).limiter).toBe(3);
    expect((await store.cleanup({ limit: 10 })).limiter).toBe(0);
    const rows = await q(`SELECT count(*)::int AS n FROM "${schema}".limiter_state`);
    expect(rows.rows[0].n).toBe(1);
  });
});
