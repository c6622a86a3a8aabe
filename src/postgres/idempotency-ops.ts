import { InvalidArgumentError } from '../core/errors.js';
import type {
  IdempotencyBeginCommand,
  IdempotencyBeginReply,
  IdempotencyRecordState,
} from '../store/idempotency.js';
import type { PgContext } from './context.js';
import type { PgCleanup, PgIdempotencyOps } from './ops.js';
import { fromBytes, intColumn, pgBytes, pgText, statementName, unexpectedReply } from './pg-args.js';

/**
 * The idempotency records on PostgreSQL (DESIGN §3.6, §3.7): one row per (name, key) of seed
 * 002's idempotency table, one call of one function of migration 004 per operation (one
 * statement, one round trip; sql/004-idempotency.sql says how each is atomic under READ
 * COMMITTED), on the database's clock. Through `inTransaction` a record commits or rolls back with
 * the caller's own writes: the one place where "record + effect" is atomic for an arbitrary effect.
 *
 * Arguments are checked before any SQL, as the other stores check them: names, keys, hashes and
 * tokens well-formed and without U+0000 (`text`); values well-formed and kept byte for byte
 * (`bytea`, U+0000 included); leases and ttls positive safe integers up to 2^52 ms.
 */
export function postgresIdempotencyOps(ctx: PgContext): PgIdempotencyOps {
  const s = ctx.schema;
  const sql = {
    begin: {
      name: statementName(s, 'idempotency-begin'),
      text: `SELECT outcome, now_ms, lease_expires_ms, takeover, retry_after_ms, stored_value FROM ${s}.idempotency_begin($1::text, $2::text, $3::text, $4::text, $5::bigint)`,
    },
    renew: {
      name: statementName(s, 'idempotency-renew'),
      text: `SELECT ${s}.idempotency_renew($1::text, $2::text, $3::text, $4::bigint) AS done`,
    },
    complete: {
      name: statementName(s, 'idempotency-complete'),
      text: `SELECT ${s}.idempotency_complete($1::text, $2::text, $3::text, $4::bytea, $5::bigint) AS done`,
    },
    release: {
      name: statementName(s, 'idempotency-release'),
      text: `SELECT ${s}.idempotency_release($1::text, $2::text, $3::text) AS done`,
    },
    // A plain read (no function, no migration): the record's liveness judged as the functions of
    // migration 004 judge it, on the database's clock; one row whether or not the record exists.
    get: {
      name: statementName(s, 'idempotency-get'),
      text: `SELECT CASE WHEN i.status = 'completed' AND t.now_ms < i.expires_at THEN 'completed' WHEN i.status = 'in-progress' AND t.now_ms < i.lease_expires_at THEN 'in-progress' ELSE 'absent' END AS state FROM (SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms) AS t LEFT JOIN ${s}.idempotency AS i ON i.name = $1::text AND i.key = $2::text`,
    },
  } as const;

  return {
    async idempotencyBegin(command: IdempotencyBeginCommand): Promise<IdempotencyBeginReply> {
      const values = [
        pgText('name', command?.name),
        pgText('key', command?.key),
        pgText('payloadHash', command?.payloadHash),
        pgText('token', command?.token),
        ms('leaseMs', command?.leaseMs),
      ];
      const [row] = await ctx.query('idempotencyBegin', 'write', { ...sql.begin, values });
      const now = intColumn('idempotencyBegin', row?.['now_ms']);
      switch (row?.['outcome']) {
        case 'acquired':
          return {
            outcome: 'acquired',
            takeover: row['takeover'] === true,
            leaseExpiresAt: intColumn('idempotencyBegin', row['lease_expires_ms']),
            now,
          };
        case 'completed':
          return { outcome: 'completed', value: fromBytes('idempotencyBegin', row['stored_value']), now };
        case 'in-progress':
          return {
            outcome: 'in-progress',
            retryAfterMs: intColumn('idempotencyBegin', row['retry_after_ms']),
            now,
          };
        case 'mismatch':
          return { outcome: 'mismatch', now };
        default:
          throw unexpectedReply('idempotencyBegin', row);
      }
    },

    async idempotencyRenew(name, key, token, leaseMs) {
      const values = [
        pgText('name', name),
        pgText('key', key),
        pgText('token', token),
        ms('leaseMs', leaseMs),
      ];
      return done('idempotencyRenew', await ctx.query('idempotencyRenew', 'write', { ...sql.renew, values }));
    },

    async idempotencyComplete(name, key, token, value, ttlMs) {
      const values = [
        pgText('name', name),
        pgText('key', key),
        pgText('token', token),
        pgBytes('value', value),
        ms('ttlMs', ttlMs),
      ];
      return done(
        'idempotencyComplete',
        await ctx.query('idempotencyComplete', 'write', { ...sql.complete, values }),
      );
    },

    async idempotencyRelease(name, key, token) {
      const values = [pgText('name', name), pgText('key', key), pgText('token', token)];
      return done(
        'idempotencyRelease',
        await ctx.query('idempotencyRelease', 'write', { ...sql.release, values }),
      );
    },

    async idempotencyGet(name, key): Promise<IdempotencyRecordState> {
      const values = [pgText('name', name), pgText('key', key)];
      const [row] = await ctx.query('idempotencyGet', 'read', { ...sql.get, values });
      const state = row?.['state'];
      if (state !== 'completed' && state !== 'in-progress' && state !== 'absent') {
        throw unexpectedReply('idempotencyGet', row);
      }
      return state;
    },
  };
}

/**
 * Deletes at most `limit` expired records, oldest expiry first: completed ones past their ttl,
 * and in-progress ones a lease past their lease (the row's `expires_at`: the Redis store keeps a
 * dead holder's record that long too, so a caller retrying after its `retryAfterMs` is told it
 * took over). A dead record answers as absent whether or not it was deleted yet, so when cleanup
 * runs changes no answer but `takeover`.
 */
export function idempotencyCleanup(ctx: PgContext): PgCleanup {
  const statement = {
    name: statementName(ctx.schema, 'idempotency-cleanup'),
    text: `SELECT ${ctx.schema}.idempotency_cleanup($1::int) AS deleted`,
  };
  return async (limit) => {
    // The store checks `limit` (a positive safe integer); the function takes an int.
    const bounded = Math.min(limit, 2 ** 31 - 1);
    const [row] = await ctx.query('cleanup', 'write', { ...statement, values: [bounded] });
    return intColumn('cleanup', row?.['deleted']);
  };
}

/**
 * A lease or ttl the database adds to its time: a positive safe integer of ms up to 2^52, as the
 * memory and Redis stores take it; now (~2^40.7 ms) plus twice that stays far inside bigint.
 */
function ms(path: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0 || value > 2 ** 52) {
    throw new InvalidArgumentError(path, 'a positive safe integer of milliseconds (at most 2^52)', value);
  }
  return value;
}

function done(operation: string, rows: Record<string, unknown>[]): boolean {
  const value = rows[0]?.['done'];
  if (typeof value !== 'boolean') throw unexpectedReply(operation, rows[0]);
  return value;
}
