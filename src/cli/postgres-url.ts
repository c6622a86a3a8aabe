// What `onceflow migrate --postgres URL` says about its URL: refused up front when pg would not
// connect where it says (pg reads any string as a URL relative to `postgres://base`: `not a url`
// is a database on a host named `base`, and fails later with `getaddrinfo ENOTFOUND base`), and,
// when the connection fails, what failed in words: nothing listens there, the host is unknown,
// or something listens that is not PostgreSQL.
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { DemoFailure } from './failure.js';
import { redactUrl } from './redact-url.js';

/** A `--postgres` value that is no PostgreSQL URL: exit code 2 (see migrate-command.ts). */
export class PostgresUrlError extends Error {}

/**
 * The URL's server as pg connects to it (localhost:5432 when absent). A `host` that starts with
 * `/` is a directory holding the server's unix socket, `.s.PGSQL.<port>`, as in libpq.
 */
export interface PostgresAddress {
  readonly host: string;
  readonly port: number;
}

type ParseConnectionString = (value: string) => { host?: string | null; port?: string | number | null };

/**
 * pg's own connection-string parser (pg-connection-string, a dependency of pg), so that what is
 * accepted here is what pg reads: found through pg, which the command needs anyway.
 */
function pgParser(): ParseConnectionString {
  try {
    const fromPg = createRequire(createRequire(import.meta.url).resolve('pg'));
    return (fromPg('pg-connection-string') as { parse: ParseConnectionString }).parse;
  } catch (cause) {
    throw new DemoFailure('`onceflow migrate` needs the pg package: npm install pg', { cause });
  }
}

// libpq's keyword/value form (`host=db dbname=app`): pg has no parser for it, it takes the whole
// string for a database name on the host `base`.
const KEY_VALUE = /^\s*[a-z_]+\s*=/i;
const SCHEMES = new Set(['postgres:', 'postgresql:', 'socket:']);

/** `value` with its passwords replaced: a URL's, and a keyword/value string's `password=`. */
function redact(value: string): string {
  return redactUrl(value).replace(/(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S*)/gi, '$1***');
}

/**
 * Checks a `--postgres` value: what pg's connection-string parser reads as the server it names:
 * a `postgres://` or `postgresql://` URL (a unix socket as `?host=/var/run/postgresql` or a
 * `%2F`-encoded host), a `socket:/dir?db=name` URL, or pg's `/dir dbname` form. Returns where it
 * points. Throws {@link PostgresUrlError} naming the value (its password redacted).
 */
export function checkPostgresUrl(option: string, value: string): PostgresAddress {
  const refuse = (why: string): never => {
    throw new PostgresUrlError(
      `Expected \`${option}\` to be a PostgreSQL URL (postgres://user@host:5432/db, or a unix socket: ` +
        `postgresql://user@/db?host=/var/run/postgresql), got \`${redact(value)}\`${why}`,
    );
  };
  if (KEY_VALUE.test(value)) {
    refuse(
      ': pg reads no `keyword=value` connection strings (it would take this one for a database name on a host ' +
        'named `base`); write it as a URL, postgresql://user@host:port/dbname?sslmode=...',
    );
  }
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(value)?.[0].toLowerCase();
  if (!value.startsWith('/') && (scheme === undefined || !SCHEMES.has(scheme))) refuse('');
  let parsed: ReturnType<ParseConnectionString>;
  try {
    parsed = pgParser()(value);
  } catch (err) {
    if (err instanceof DemoFailure) throw err;
    return refuse(`: ${redact(err instanceof Error ? err.message : String(err))}`);
  }
  const port =
    parsed.port === undefined || parsed.port === null || parsed.port === '' ? 5432 : Number(parsed.port);
  if (!Number.isInteger(port) || port < 1 || port > 65535) refuse(`: port \`${String(parsed.port)}\``);
  return { host: parsed.host || 'localhost', port };
}

/** Where `address` is, in words: host:port, [v6]:port, or a unix socket's path. */
function described(address: PostgresAddress): string {
  if (address.host.startsWith('/')) return socketPath(address);
  return `${address.host.includes(':') ? `[${address.host}]` : address.host}:${address.port}`;
}

function socketPath(address: PostgresAddress): string {
  return `${address.host.replace(/\/$/, '')}/.s.PGSQL.${address.port}`;
}

// A TCP connect to the URL's address takes a round trip; 2 s is far above one on any network a
// deploy job reaches its database over, and the probe only runs after a failed migration.
const PROBE_MS = 2000;

/** Whether something accepts TCP connections at `address` (within {@link PROBE_MS}). */
function listening(address: PostgresAddress): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = address.host.startsWith('/')
      ? connect({ path: socketPath(address) })
      : connect({ host: address.host, port: address.port });
    const done = (answer: boolean) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(PROBE_MS, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * Why connecting to `address` failed, in words: the server's own message when PostgreSQL
 * answered (a wrong password, a missing database), else what the network said, and when
 * something listens at the address but the driver failed anyway (`write EPIPE`, a reset, no
 * handshake within the connect timeout), that it is not a PostgreSQL server.
 */
export async function explainFailure(cause: unknown, address: PostgresAddress): Promise<string> {
  const err = cause as { message?: unknown; code?: unknown; syscall?: unknown; severity?: unknown };
  const message = typeof err?.message === 'string' ? err.message : String(cause);
  const where = described(address);
  // A PostgreSQL server answered (pg's DatabaseError carries the severity): its words say it.
  if (typeof err?.severity === 'string') return message;
  // A unix socket that is not there is ENOENT; one nobody accepts on, ECONNREFUSED.
  if (err?.code === 'ECONNREFUSED' || err?.code === 'ENOENT')
    return `nothing listens at ${where} (${message})`;
  if (err?.code === 'ENOTFOUND' || err?.code === 'EAI_AGAIN') {
    return `host ${address.host} not found (${message})`;
  }
  if (await listening(address)) {
    return (
      `the server at ${where} did not answer as a PostgreSQL server (is it the port of another service, ` +
      `such as Redis on 6379?): ${message}`
    );
  }
  return `no answer from ${where} (${message})`;
}
