import { InvalidArgumentError } from '../core/errors.js';
/**
 * The key layout of the Redis store. Every key of one owner carries the same `{hash tag}`, built
 * from the ledger name and the owner, so each ledger step is one script on one Cluster node:
 *
 *   <prefix>{<ledger>:<owner>}:s   hash    balances, journal counter, horizon, orders and window
 *                                          in one field (s, format in ledger-apply.lua), and this
 *                                          owner's total per scope (t:<#scope>:<scope><field>)
 *   <prefix>{<ledger>:<owner>}:j   stream  journal
 *   <prefix>{<ledger>}:owners      set     registry of owners (for journal queries over all owners)
 *   <prefix>{<ledger>|<scope>}:owners set  registry of owners that booked under a scope
 *
 * Per-scope reconciliation never needs a cross-slot script: an owner is added to the scope's
 * registry (an idempotent SADD) *before* its first apply under that scope, so the registry is
 * always a superset of the owners with a share; `totals(scope)` sums those owners' `t:` fields.
 * A crash between the two steps leaves an owner registered with nothing booked, which adds 0.
 *
 * Ledger names, owners and scopes are escaped (`%`, `{`, `}`, `:`, `|`), so no id can end a hash
 * tag early or imitate another id's key.
 *
 * @example
 * ```ts
 * import { escapeId } from 'onceflow/redis';
 * escapeId('p:1'); // 'p%3A1'
 * escapeId('{a}|b%'); // '%7Ba%7D%7Cb%25'
 * // Owner `p:1` of ledger `settle`: its keys share the hash tag {settle:p%3A1}, one slot.
 * `{${escapeId('settle')}:${escapeId('p:1')}}`; // '{settle:p%3A1}'
 * ```
 */
export function escapeId(id: string): string {
  if (typeof id !== 'string') throw new InvalidArgumentError('id', 'a string', id);
  return id.replace(/[%{}:|]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

/** The two keys of one owner, in the order ledger-apply.lua takes them: state, journal. */
export function ownerKeys(prefix: string, ledger: string, owner: string): [state: string, journal: string] {
  const base = `${prefix}{${escapeId(ledger)}:${escapeId(owner)}}:`;
  return [`${base}s`, `${base}j`];
}

export function ledgerOwnersKey(prefix: string, ledger: string): string {
  return `${prefix}{${escapeId(ledger)}}:owners`;
}

export function scopeOwnersKey(prefix: string, ledger: string, scope: string): string {
  return `${prefix}{${escapeId(ledger)}|${escapeId(scope)}}:owners`;
}

/**
 * The field of the state hash that holds `field`'s total under `scope`: prefixed with the scope's
 * UTF-8 byte length, as Lua's `#` counts it, so no (scope, field) pair can imitate another.
 */
export function scopeField(scope: string, field: string): string {
  return `t:${Buffer.byteLength(scope, 'utf8')}:${scope}${field}`;
}
