import { describe, expect, it } from 'vitest';
import { boundContext, poolContext } from './context.js';
import { pgFailure } from './pg-error.js';
import type { PgPoolClientLike, PgPoolLike } from './pg-like.js';

const pgError = (code: string, message = `SQLSTATE ${code}`) => Object.assign(new Error(message), { code });

/** A pool whose clients answer from `script` in turn (an Error is thrown), recording releases. */
function scriptedPool(script: (Error | Record<string, unknown>[])[]) {
  const released: (Error | boolean | undefined)[] = [];
  let connects = 0;
  const pool: PgPoolLike = {
    async query() {
      throw new Error('the store checks a client out');
    },
    async connect(): Promise<PgPoolClientLike> {
      connects++;
      return {
        async query() {
          const next = script.shift();
          if (next === undefined) throw new Error('script exhausted');
          if (next instanceof Error) throw next;
          return { rows: next };
        },
        release(err) {
          released.push(err);
        },
      };
    },
  };
  return { pool, released, connects: () => connects };
}

const ready = () => Promise.resolve();

describe('poolContext', () => {
  it('sends a statement again after a serialization failure or a deadlock, then answers', async () => {
    const { pool, released, connects } = scriptedPool([pgError('40001'), pgError('40P01'), [{ ok: 1 }]]);
    const ctx = poolContext(pool, 's', ready, 10_000);
    expect(await ctx.query('ledgerApply', 'write', { text: 'SELECT 1' })).toEqual([{ ok: 1 }]);
    expect(connects()).toBe(3);
    // The connections were fine: returned to the pool, not destroyed.
    expect(released).toEqual([undefined, undefined, undefined]);
  });

  it('gives up after 5 tries with a retriable StoreError saying it was not applied', async () => {
    const { pool } = scriptedPool(Array.from({ length: 6 }, () => pgError('40001')));
    const ctx = poolContext(pool, 's', ready, 10_000);
    await expect(ctx.query('ledgerApply', 'write', { text: 'SELECT 1' })).rejects.toMatchObject({
      code: 'ERR_STORE',
      operation: 'ledgerApply',
      outcome: 'not-applied',
      retriable: true,
    });
  });

  it('a connection lost mid-statement: outcome unknown for a write (its commit may have landed), the client destroyed', async () => {
    const lost = new Error('Connection terminated unexpectedly');
    const { pool, released } = scriptedPool([lost]);
    await expect(
      poolContext(pool, 's', ready, 10_000).query('ledgerApply', 'write', { text: 'x' }),
    ).rejects.toMatchObject({
      outcome: 'unknown',
      retriable: true,
    });
    expect(released).toEqual([lost]);
    const { pool: again } = scriptedPool([
      pgError('57P01', 'terminating connection due to administrator command'),
    ]);
    await expect(
      poolContext(again, 's', ready, 10_000).query('ledgerBalances', 'read', { text: 'x' }),
    ).rejects.toMatchObject({
      outcome: 'not-applied',
      retriable: true,
    });
  });

  it('no connection to be had: not applied, retriable; an error the server answered: not applied, not retriable', async () => {
    const refused: PgPoolLike = {
      query: async () => ({ rows: [] }),
      connect: async () => {
        throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
      },
    };
    await expect(
      poolContext(refused, 's', ready, 10_000).query('ledgerApply', 'write', { text: 'x' }),
    ).rejects.toMatchObject({
      outcome: 'not-applied',
      retriable: true,
    });
    const { pool } = scriptedPool([pgError('22P02', 'invalid input syntax')]);
    await expect(
      poolContext(pool, 's', ready, 10_000).query('ledgerApply', 'write', { text: 'x' }),
    ).rejects.toMatchObject({
      outcome: 'not-applied',
      retriable: false,
    });
  });

  it('waits for the migration; a failed migration fails the operation without sending it', async () => {
    const { pool, connects } = scriptedPool([[{ ok: 1 }]]);
    const failing = poolContext(pool, 's', () => Promise.reject(new Error('migration failed')), 10_000);
    await expect(failing.query('ledgerApply', 'write', { text: 'x' })).rejects.toThrow('migration failed');
    expect(connects()).toBe(0);
  });
});

describe('boundContext', () => {
  it("never retries inside the caller's transaction; whatever failed, nothing of it commits", async () => {
    let calls = 0;
    const client = {
      async query(): Promise<never> {
        calls++;
        throw pgError('40P01');
      },
    };
    await expect(
      boundContext(client, 's', ready, 10_000).query('ledgerApply', 'write', { text: 'x' }),
    ).rejects.toMatchObject({
      outcome: 'not-applied',
      retriable: true,
    });
    expect(calls).toBe(1);
    const gone = { query: async (): Promise<never> => Promise.reject(new Error('Connection terminated')) };
    await expect(
      boundContext(gone, 's', ready, 10_000).query('ledgerApply', 'write', { text: 'x' }),
    ).rejects.toMatchObject({
      outcome: 'not-applied',
    });
  });
});

describe('pgFailure', () => {
  it.each([
    ['53300', 'not-applied', true],
    ['57014', 'not-applied', true],
    ['08006', 'unknown', true],
    ['57P02', 'unknown', true],
    ['23505', 'not-applied', false],
    ['42883', 'not-applied', false],
  ] as const)('SQLSTATE %s after the statement was sent: %s, retriable %s', (code, outcome, retriable) => {
    expect(pgFailure(pgError(code), 'write', true)).toEqual({ outcome, retriable });
  });
});
