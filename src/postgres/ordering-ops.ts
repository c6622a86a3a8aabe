import { InvalidArgumentError } from '../core/errors.js';
import type { LeaseReply, VersionUpsertReply } from '../store/ordering.js';
import type { PgContext } from './context.js';
import type { PgOrderingOps } from './ops.js';
import { fromBytes, intColumn, pgBytes, pgText, safeInt, statementName, unexpectedReply } from './pg-args.js';

// A version is a canonical integer string (VersionGate writes that form; version-gate.lua and
// compareIntStrings compare it): no '+', no leading zero, no '-0', no exponent.
const CANONICAL_INT = /^(0|-?[1-9]\d*)$/;
// PostgreSQL numeric holds at most 131072 digits before the decimal point; a longer version
// would fail in the database instead of being refused here. Far beyond any real version (a
// 64-bit LSN or snowflake id has 20 digits).
const MAX_VERSION_DIGITS = 131_072;

/**
 * The ordering operations on PostgreSQL (DESIGN §3.4): checkpoints, version gates, snowflake
 * clocks and leases, each one call of one function of migration 003 (sql/003-ordering.sql says
 * how each is atomic under READ COMMITTED), so one statement and one round trip. Arguments are
 * checked before any SQL: strings must be well-formed, names and keys without U+0000 (`text`),
 * numbers safe integers, versions canonical integers; values and checkpoint data are kept byte
 * for byte (`bytea`, U+0000 included), as the memory store keeps them.
 */
export function postgresOrderingOps(ctx: PgContext): PgOrderingOps {
  const s = ctx.schema;
  // One statement text per operation, prepared once per connection under its name. A write calls
  // its function (the read, the decision and the write in one statement, under the row's lock); a
  // load is a plain SELECT by primary key, already one atomic statement on one snapshot, so a
  // function around it would add a call and nothing else.
  const sql = {
    checkpointSave: {
      name: statementName(s, 'checkpoint-save'),
      text: `SELECT ${s}.checkpoint_save($1::text, $2::bigint, $3::bytea) AS saved`,
    },
    checkpointLoad: {
      name: statementName(s, 'checkpoint-load'),
      text: `SELECT revision, data FROM ${s}.ordering_checkpoint WHERE name = $1::text`,
    },
    versionUpsert: {
      name: statementName(s, 'version-upsert'),
      text: `SELECT outcome, stored FROM ${s}.version_upsert($1::text, $2::text, $3::numeric, $4::bytea)`,
    },
    versionGet: {
      name: statementName(s, 'version-get'),
      text: `SELECT version::text AS version, value FROM ${s}.version_gate WHERE gate = $1::text AND key = $2::text`,
    },
    timestampAdvance: {
      name: statementName(s, 'timestamp-advance'),
      text: `SELECT ${s}.timestamp_advance($1::text, $2::bigint) AS ms`,
    },
    leaseRenew: {
      name: statementName(s, 'lease-renew'),
      text: `SELECT held, ms FROM ${s}.lease_renew($1::text, $2::text, $3::bigint, $4::bigint)`,
    },
  } as const;

  return {
    async checkpointSave(name, revision, data) {
      const values = [pgText('name', name), safeInt('revision', revision), pgBytes('data', data)];
      const [row] = await ctx.query('checkpointSave', 'write', { ...sql.checkpointSave, values });
      return row?.['saved'] === true ? 'saved' : 'stale';
    },

    async checkpointLoad(name) {
      const values = [pgText('name', name)];
      const [row] = await ctx.query('checkpointLoad', 'read', { ...sql.checkpointLoad, values });
      if (row === undefined) return undefined;
      return {
        revision: intColumn('checkpointLoad', row['revision']),
        data: fromBytes('checkpointLoad', row['data']),
      };
    },

    // One argument check, then one statement: the upsert is the hot path of a CDC consumer.
    async versionUpsert(gate, key, version, value): Promise<VersionUpsertReply> {
      const values = [pgText('gate', gate), pgText('key', key), versionArg(version), pgBytes('value', value)];
      const [row] = await ctx.query('versionUpsert', 'write', { ...sql.versionUpsert, values });
      const outcome = row?.['outcome'];
      if (outcome !== 'applied' && outcome !== 'duplicate' && outcome !== 'stale') {
        throw unexpectedReply('versionUpsert', row);
      }
      return { outcome, version: String(row?.['stored']) };
    },

    async versionGet(gate, key) {
      const values = [pgText('gate', gate), pgText('key', key)];
      const [row] = await ctx.query('versionGet', 'read', { ...sql.versionGet, values });
      if (row === undefined) return undefined;
      return { version: String(row['version']), value: fromBytes('versionGet', row['value']) };
    },

    async timestampAdvance(name, ms) {
      const values = [pgText('name', name), safeInt('ms', ms)];
      const [row] = await ctx.query('timestampAdvance', 'write', { ...sql.timestampAdvance, values });
      return intColumn('timestampAdvance', row?.['ms']);
    },

    async leaseRenew(name, run, ms, takeover): Promise<LeaseReply> {
      const values = [
        pgText('name', name),
        pgText('run', run),
        safeInt('ms', ms),
        takeover === undefined ? null : safeInt('takeover', takeover),
      ];
      const [row] = await ctx.query('leaseRenew', 'write', { ...sql.leaseRenew, values });
      if (typeof row?.['held'] !== 'boolean') throw unexpectedReply('leaseRenew', row);
      return { held: row['held'], ms: intColumn('leaseRenew', row['ms']) };
    },
  };
}

function versionArg(version: unknown): string {
  if (typeof version !== 'string' || !CANONICAL_INT.test(version)) {
    throw new InvalidArgumentError(
      'version',
      "a canonical integer string (no '+', no leading zero, no '-0')",
      version,
    );
  }
  if (version.length - (version.startsWith('-') ? 1 : 0) > MAX_VERSION_DIGITS) {
    throw new InvalidArgumentError(
      'version',
      `an integer of at most ${MAX_VERSION_DIGITS} digits (PostgreSQL numeric holds no more)`,
      `${version.slice(0, 20)}... (${version.length} characters)`,
    );
  }
  return version;
}
