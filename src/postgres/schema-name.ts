import { InvalidOptionError } from '../core/errors.js';

// An unquoted PostgreSQL identifier of lower-case letters, digits and underscores, at most 63
// bytes (NAMEDATALEN - 1: a longer one is truncated by the server, and two schemas would meet).
// Nothing else is taken: the name is written into DDL and function bodies, so a quote, a dot or
// a semicolon must never reach SQL, and a name that needs quoting is a name users mistype.
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

// Names the server or extensions own; a store writing its tables there would mix with theirs.
const RESERVED = /^(pg_|information_schema$|public$)/;

/**
 * The store's schema name, checked: `[a-z_][a-z0-9_]*`, at most 63 characters, not `public`,
 * `information_schema` or `pg_*`. Returns it as it may be written into SQL (always double-quoted
 * there too).
 */
export function checkSchemaName(schema: unknown): string {
  if (typeof schema !== 'string' || !SCHEMA_NAME.test(schema) || RESERVED.test(schema)) {
    throw new InvalidOptionError(
      'schema',
      'a schema name of lower-case letters, digits and _ (at most 63, not starting with a digit; not public, information_schema or pg_*)',
      schema,
    );
  }
  return schema;
}
