import { parseArgs } from 'node:util';
import { DemoFailure } from './failure.js';
import { checkPostgresUrl, explainFailure, PostgresUrlError } from './postgres-url.js';
import { redactUrl } from './redact-url.js';

/** The help text of `onceflow migrate`. */
export const MIGRATE_HELP = `Usage: onceflow migrate --postgres URL [--schema NAME]

Creates the PostgreSQL store's schema, or brings it up to the version this onceflow knows: every
migration the schema has not had, in order, in one transaction. Safe to run from several deploy
jobs at once (they take turns on an advisory lock) and again (a current schema is left as it is).
Run it ahead of a deploy when the application's database user may not run DDL, and create the
store with \`migrate: false\`.

Options:
  --postgres URL   the database: postgres://user@host:5432/db, or a unix socket
                   (postgresql:///db?host=/var/run/postgresql, socket:/var/run/postgresql?db=db);
                   needs pg installed
  --schema NAME    the store's schema (default onceflow)
  -h, --help       this help

Exit codes: 0 the schema is current; 1 the migration failed (the message says why: nothing listens
at the address, an unknown host, the server's own words, a server that is not PostgreSQL, or a
timeout, and whether the migration may still have landed; migrations are idempotent: run it again);
2 invalid options (a --postgres value that is no PostgreSQL URL among them).
`;

/** Runs `onceflow migrate`; resolves to the exit code. Prints what it applied. */
export async function migrateCommand(args: string[], out: NodeJS.WritableStream): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      postgres: { type: 'string' },
      schema: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) {
    out.write(MIGRATE_HELP);
    return 0;
  }
  if (values.postgres === undefined) throw new UsageError('`--postgres URL` is required');
  let address: ReturnType<typeof checkPostgresUrl>;
  try {
    address = checkPostgresUrl('--postgres', values.postgres);
  } catch (err) {
    if (err instanceof PostgresUrlError) throw new UsageError(err.message);
    throw err;
  }
  let Pool: typeof import('pg').Pool;
  try {
    ({ Pool } = (await import('pg')).default);
  } catch (cause) {
    throw new DemoFailure('`onceflow migrate` needs the pg package: npm install pg', { cause });
  }
  const { migrate } = await import('../postgres/index.js');
  const url = values.postgres;
  // One connection: the migration runs in one transaction; 5 s to connect names a wrong URL fast.
  const pool = new Pool({ connectionString: url, max: 1, connectionTimeoutMillis: 5000 });
  pool.on('error', () => {});
  try {
    const result = await migrate({ pool, ...(values.schema === undefined ? {} : { schema: values.schema }) });
    const what =
      result.applied.length === 0
        ? 'already current'
        : `applied ${result.applied.map((m) => `${m.version} (${m.name})`).join(', ')}`;
    out.write(`schema "${result.schema}" at version ${result.version}: ${what}\n`);
    return 0;
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ERR_INVALID_OPTION')
      throw new UsageError((err as Error).message);
    const cause = (err as { cause?: unknown }).cause;
    // A failure before the migration ran (no connection) is explained in words; the migration's
    // own failures (a schema newer than this onceflow) keep theirs.
    const connecting = (err as { operation?: unknown }).operation === 'migrate' && cause instanceof Error;
    const reason = connecting ? await explainFailure(cause, address) : (err as Error).message;
    // The URL and the reason are redacted apart: a `?password=` value runs to the next space, and
    // would take the `: ` after the URL with it.
    throw new DemoFailure(`migrate failed on ${redactUrl(url)}: ${redactUrl(reason)}`, { cause: err });
  } finally {
    await pool.end().catch(() => {});
  }
}

/** A wrong option of `onceflow migrate`: exit code 2, with the help pointer. */
export class UsageError extends Error {}
