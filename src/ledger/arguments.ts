// The ledger's checks of the arguments it passes on to its store: owners, scopes, journal queries.
import { InvalidArgumentError } from '../core/errors.js';
import { withinLimit } from '../core/limits.js';
import { isPlainObject, keysOf, knownKeys, nonEmptyStringArg } from '../core/validate.js';
import type { JournalQuery } from '../store/store.js';

const QUERY_FIELDS = keysOf<JournalQuery>({ owner: true, scope: true, after: true, limit: true });

/** An owner argument: a non-empty string within the owner size limit. */
export function ownerArg(path: string, owner: unknown): string {
  return withinLimit(path, nonEmptyStringArg(path, owner), 'ownerBytes');
}

/** A scope argument: a non-empty string within the scope size limit. */
export function scopeArg(path: string, scope: unknown): string {
  return withinLimit(path, nonEmptyStringArg(path, scope), 'scopeBytes');
}

/** A journal query, checked (unknown filters refused by name). */
export function checkQuery(query: JournalQuery): JournalQuery {
  if (!isPlainObject(query)) throw new InvalidArgumentError('query', 'an object', query);
  // A misspelt filter would return every entry instead of the ones asked for.
  knownKeys('query', query, QUERY_FIELDS, 'argument');
  if (query.owner !== undefined) ownerArg('query.owner', query.owner);
  if (query.scope !== undefined) scopeArg('query.scope', query.scope);
  for (const key of ['after', 'limit'] as const) {
    const v = query[key];
    if (v !== undefined && (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)) {
      throw new InvalidArgumentError(`query.${key}`, 'a non-negative safe integer', v);
    }
  }
  if (query.after !== undefined && query.owner === undefined) {
    // Sequence numbers are only comparable within one owner's journal (DESIGN §1 principle 5).
    throw new InvalidArgumentError('query.after', 'used together with `query.owner`', query.after);
  }
  return query;
}
