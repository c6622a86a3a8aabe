// What `onceflow migrate --postgres URL` says about its URL: refused up front when it is no
// PostgreSQL URL (pg would read `not a url` as a path on a host named `base` and fail with
// `getaddrinfo ENOTFOUND base`), and, when the connection fails, what failed in words: nothing
// listens there, the host is unknown, or something listens that is not PostgreSQL.
import { connect } from 'node:net';
import { redactUrl } from '../demo/redact-url.js';

/** A `--postgres` value that is no PostgreSQL URL: exit code 2 (see migrate-command.ts). */
export class PostgresUrlError extends Error {}

/** The URL's host and port as pg connects to them (localhost:5432 when absent). */
export interface PostgresAddress {
  readonly host: string;
  readonly port: number;
}

/**
 * Checks a `--postgres` value: a `postgres://` or `postgresql://` URL that parses. Returns where
 * it points. Throws {@link PostgresUrlError} naming the value (its password redacted).
 */
export function checkPostgresUrl(option: string, value: string): PostgresAddress {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:')) {
    throw new PostgresUrlError(
      `Expected \`${option}\` to be a PostgreSQL URL (postgres://user@host:5432/db), got \`${redactUrl(value)}\``,
    );
  }
  // An IPv6 host comes bracketed from URL; pg and node:net take it bare.
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1') || 'localhost';
  return { host, port: url.port === '' ? 5432 : Number(url.port) };
}

// A TCP connect to the URL's address takes a round trip; 2 s is far above one on any network a
// deploy job reaches its database over, and the probe only runs after a failed migration.
const PROBE_MS = 2000;

/** Whether something accepts TCP connections at `address` (within {@link PROBE_MS}). */
function listening(address: PostgresAddress): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: address.host, port: address.port });
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
  const where = `${address.host.includes(':') ? `[${address.host}]` : address.host}:${address.port}`;
  // A PostgreSQL server answered (pg's DatabaseError carries the severity): its words say it.
  if (typeof err?.severity === 'string') return message;
  if (err?.code === 'ECONNREFUSED') return `nothing listens at ${where} (${message})`;
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
