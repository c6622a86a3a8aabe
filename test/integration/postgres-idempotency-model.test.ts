import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore } from '../../src/postgres/index.js';
import {
  type Command,
  commands,
  EVERY_ANSWER,
  type ModelOp,
  type ModelRecords,
  modelStep,
} from '../support/idempotency-model.js';
import { dropSchema, runSchema, testPool } from './pg-env.js';

// The four idempotency operations and cleanup on PostgreSQL, step by step against the reference
// model of a record (test/support/idempotency-model.ts). The database decides on its own clock,
// so the model is stepped at the time it decided: begin answers it (`now`); a renew or complete
// that succeeded wrote now + lease (or + ttl) into the row, read back exactly. Otherwise the
// statement ran at some time in [T0, T1] (the database clock read just before and just after
// it): a lease live at its time was live at T0, a dead one is dead at T1, so a `true` is checked
// against the model at T0 and a `false` at T1. A wrong answer is caught unless a lease edge falls
// inside that interval. Time is real, as in the conformance kit: leases of tens of ms, crossed by
// real sleeps.
//
// `takeover` is the one answer that depends on whether a dead record's row is still there: the
// model keeps every dead record, the table keeps an in-progress one until cleanup passes its
// expires_at (a lease after its lease). So the test mirrors which rows the table holds (reading
// them back after each cleanup) and expects a takeover iff the row was there and in progress.

// One sequence that reaches every answer, run before the random ones, so the coverage check
// below holds whatever the random runs happen to reach.
const everyAnswer: Command[] = [
  { op: 'begin', caller: 0, key: 0, hash: 0, leaseMs: 160 }, // acquired
  { op: 'begin', caller: 1, key: 0, hash: 0, leaseMs: 160 }, // in-progress
  { op: 'begin', caller: 2, key: 0, hash: 1, leaseMs: 160 }, // mismatch
  { op: 'renew', caller: 0, leaseMs: 160 }, // renew:true
  { op: 'complete', caller: 0, value: '{"v":1}', ttlMs: 60 }, // complete:true
  { op: 'begin', caller: 1, key: 0, hash: 0, leaseMs: 160 }, // completed
  { op: 'complete', caller: 0, value: '{"v":2}', ttlMs: 1000 }, // complete:false
  { op: 'renew', caller: 0, leaseMs: 160 }, // renew:false
  { op: 'begin', caller: 2, key: 1, hash: 0, leaseMs: 40 }, // acquired
  { op: 'release', caller: 2 }, // release:true
  { op: 'release', caller: 2 }, // release:false
  { op: 'begin', caller: 1, key: 1, hash: 0, leaseMs: 40 }, // acquired
  { op: 'sleep', ms: 70 }, // past its lease, within its row's slack; key 0's ttl ran out
  { op: 'begin', caller: 0, key: 1, hash: 0, leaseMs: 40 }, // acquired+takeover
  { op: 'sleep', ms: 130 }, // past that lease and its slack
  { op: 'cleanup', limit: 1000 }, // deletes both rows
  { op: 'begin', caller: 2, key: 1, hash: 1, leaseMs: 40 }, // acquired, no takeover (row gone)
];

describe('idempotency operations on the Postgres store, against the model', () => {
  const pool = testPool(2);
  const schema = runSchema('idem_model');
  const store = createPostgresStore({ pool, schema });
  const dbNow = async () =>
    Number(
      (await pool.query('SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS t')).rows[0].t,
    );
  afterAll(async () => {
    await dropSchema(pool, schema);
    await pool.end();
  });

  it('every step answers as the model does at the time the database decided', async () => {
    let runs = 0;
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(commands(true), async (cmds) => {
        const name = `m${runs++}`;
        let records: ModelRecords = new Map();
        // The rows the table holds for this name: whether in progress, and when cleanup may drop them.
        const rows = new Map<string, { inProgress: boolean; expiresAt: number }>();
        // Each caller's last begin: its key and token (a token never reused, as in `run`).
        const callers: ({ key: string; token: string } | undefined)[] = [];
        let tokens = 0;
        for (const c of cmds) {
          if (c.op === 'sleep') {
            await new Promise((r) => setTimeout(r, c.ms));
            continue;
          }
          if (c.op === 'cleanup') {
            const t0 = await dbNow();
            const { idempotency: deleted } = await store.cleanup({ limit: c.limit });
            const t1 = await dbNow();
            const left = await pool.query(`SELECT key FROM "${schema}".idempotency WHERE name = $1`, [name]);
            const kept = new Set(left.rows.map((r) => r.key as string));
            // Only rows past their expiry go, at most `limit` of all (other names' rows are this
            // run's too, dead ones included), and every row past its expiry at T0 goes when the
            // limit leaves room.
            expect(deleted).toBeLessThanOrEqual(c.limit);
            for (const [key, row] of rows) {
              if (!kept.has(key)) {
                expect({ key, expiresAt: row.expiresAt, t1 }).toEqual({
                  key,
                  expiresAt: Math.min(row.expiresAt, t1),
                  t1,
                });
                rows.delete(key);
              } else if (c.limit === 1000) {
                expect({ key, expiresAt: row.expiresAt, t0 }).toEqual({
                  key,
                  expiresAt: Math.max(row.expiresAt, t0 + 1),
                  t0,
                });
              }
            }
            seen.add(`cleanup:${deleted > 0}`);
            continue;
          }
          if (c.op === 'begin') {
            const op: ModelOp = {
              op: 'begin',
              key: `k${c.key}`,
              hash: c.hash === 0 ? '' : 'h1',
              token: `t${tokens++}`,
              leaseMs: c.leaseMs,
            };
            const got = await store.idempotencyBegin({
              name,
              key: op.key,
              payloadHash: op.hash,
              token: op.token,
              leaseMs: op.leaseMs,
            });
            const step = modelStep(records, got.now, op);
            records = step.records;
            const { now: _, ...answer } = got;
            const want = step.answer as object;
            if (got.outcome === 'acquired') {
              const row = rows.get(op.key);
              const takeover = row?.inProgress === true;
              expect({ step: c, answer }).toEqual({ step: c, answer: { ...want, takeover } });
              rows.set(op.key, { inProgress: true, expiresAt: got.leaseExpiresAt + c.leaseMs });
            } else {
              expect({ step: c, answer }).toEqual({ step: c, answer: want });
            }
            seen.add(got.outcome + (got.outcome === 'acquired' && got.takeover ? '+takeover' : ''));
            callers[c.caller] = { key: op.key, token: op.token };
            continue;
          }
          const held = callers[c.caller] ?? { key: 'k0', token: 'never-issued' };
          const op: ModelOp =
            c.op === 'renew'
              ? { op: 'renew', key: held.key, token: held.token, leaseMs: c.leaseMs }
              : c.op === 'complete'
                ? { op: 'complete', key: held.key, token: held.token, value: c.value, ttlMs: c.ttlMs }
                : { op: 'release', key: held.key, token: held.token };
          const t0 = await dbNow();
          let got: boolean;
          if (c.op === 'renew') got = await store.idempotencyRenew(name, held.key, held.token, c.leaseMs);
          else if (c.op === 'complete')
            got = await store.idempotencyComplete(name, held.key, held.token, c.value, c.ttlMs);
          else got = await store.idempotencyRelease(name, held.key, held.token);
          const t1 = await dbNow();
          let t = got ? t0 : t1;
          if (got && c.op !== 'release') {
            const r = await pool.query(
              `SELECT lease_expires_at, expires_at FROM "${schema}".idempotency WHERE name = $1 AND key = $2`,
              [name, held.key],
            );
            // Written by this very step: its now is the expiry minus what it added.
            t =
              c.op === 'renew'
                ? Number(r.rows[0].lease_expires_at) - c.leaseMs
                : Number(r.rows[0].expires_at) - c.ttlMs;
            expect(t).toBeGreaterThanOrEqual(t0);
            expect(t).toBeLessThanOrEqual(t1);
            rows.set(held.key, {
              inProgress: c.op === 'renew',
              expiresAt: c.op === 'renew' ? t + 2 * c.leaseMs : t + c.ttlMs,
            });
          }
          if (got && c.op === 'release') rows.delete(held.key);
          const step = modelStep(records, t, op);
          records = step.records;
          expect({ step: c, got }).toEqual({ step: c, got: step.answer });
          seen.add(`${c.op}:${got}`);
        }
      }),
      { numRuns: 40, examples: [[everyAnswer]] },
    );
    // The runs reached every answer (a generator that never crossed a lease would prove little).
    for (const answer of [...EVERY_ANSWER, 'cleanup:true']) expect(seen).toContain(answer);
  }, 180_000);
});
