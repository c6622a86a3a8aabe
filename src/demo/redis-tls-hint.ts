// Why a Redis connection failed, when the cause is TLS on one side only. A rediss:// client
// against a plain server sends its TLS hello and hears nothing back (the server waits for the end
// of an inline command that never comes): the connect times out and says ETIMEDOUT. A redis://
// client against a TLS server has its first command read as a broken TLS record: the server
// resets the connection. Neither error names TLS, so the failure is checked with one probe.
import { Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

// The probe follows a failure against a server that accepted a TCP connection moments ago: it
// costs one round trip (a PING, or a TLS handshake of two), well under 1 s even at the ~300 ms of
// a connection across continents; a server that says nothing in 1 s is not answering this protocol.
const PROBE_TIMEOUT_MS = 1000;

/** The errors a TLS mismatch shows as, for a URL that asks for TLS (`tls`) or does not. */
function looksLikeMismatch(error: unknown, tls: boolean): boolean {
  const e = error as { code?: unknown; message?: unknown } | undefined;
  const code = typeof e?.code === 'string' ? e.code : '';
  const message = typeof e?.message === 'string' ? e.message : '';
  if (tls) {
    return (
      ['ETIMEDOUT', 'ECONNRESET', 'EPROTO', 'ERR_SSL_WRONG_VERSION_NUMBER'].includes(code) ||
      /ETIMEDOUT|ECONNRESET|wrong version number|packet length too long|socket disconnected before secure/i.test(
        message,
      )
    );
  }
  return ['ECONNRESET', 'EPIPE'].includes(code) || /ECONNRESET|EPIPE|Protocol error/i.test(message);
}

/** What a probe of host:port found: the protocol it tried answered, or a connection and no answer, or no connection. */
type Probe = 'answered' | 'silent' | 'unreachable';

/** Whether host:port answers a plain RESP `PING` (with any reply: PONG, NOAUTH, an error). */
function probePlain(host: string, port: number): Promise<Probe> {
  return new Promise((resolve) => {
    let connected = false;
    const socket = new Socket();
    const done = (answered: boolean) => {
      socket.destroy();
      resolve(answered ? 'answered' : connected ? 'silent' : 'unreachable');
    };
    socket.setTimeout(PROBE_TIMEOUT_MS, () => done(false));
    socket.once('error', () => done(false));
    // A RESP reply starts with one of these type bytes (RESP2 and RESP3).
    socket.once('data', (d: Buffer) => done('+-:$*%_#,(=!|>~'.includes(String.fromCharCode(d[0] ?? 0))));
    socket.connect(port, host, () => {
      connected = true;
      socket.write('PING\r\n');
    });
  });
}

/** Whether host:port completes a TLS handshake (its certificate is not judged: only the protocol). */
function probeTls(host: string, port: number): Promise<Probe> {
  return new Promise((resolve) => {
    let connected = false;
    const socket = tlsConnect({ host, port, rejectUnauthorized: false });
    const done = (answered: boolean) => {
      socket.destroy();
      resolve(answered ? 'answered' : connected ? 'silent' : 'unreachable');
    };
    socket.setTimeout(PROBE_TIMEOUT_MS, () => done(false));
    socket.once('connect', () => {
      connected = true;
    });
    socket.once('error', () => done(false));
    socket.once('secureConnect', () => done(true));
  });
}

/**
 * A sentence to add to a connection error of `url` when TLS may not match on both ends, or `''`.
 * Confirmed with one probe of the server when it answers (`the server ... answers without TLS`);
 * otherwise said as a possibility.
 *
 * Usage (the demo is internal to the CLI, not public API):
 *
 *     await tlsMismatchHint('rediss://127.0.0.1:6379', err); // '; TLS does not match: ...'
 */
export async function tlsMismatchHint(url: string, error: unknown): Promise<string> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return '';
  }
  const tls = parsed.protocol === 'rediss:';
  if (!looksLikeMismatch(error, tls)) return '';
  const host = parsed.hostname.replace(/^\[|\]$/g, '') || 'localhost';
  const port = parsed.port === '' ? 6379 : Number(parsed.port);
  const where = `${host}:${port}`;
  // A server that cannot be reached at all is not a TLS question: the error says enough.
  if (tls) {
    const probe = await probePlain(host, port);
    if (probe === 'unreachable') return '';
    return probe === 'answered'
      ? `; TLS does not match: the URL asks for TLS (rediss://) and the server at ${where} answers without it: use redis://`
      : '; TLS may not match: the URL asks for TLS (rediss://); if the server does not use TLS, use redis://';
  }
  const probe = await probeTls(host, port);
  if (probe === 'unreachable') return '';
  return probe === 'answered'
    ? `; TLS does not match: the server at ${where} speaks TLS and the URL does not ask for it: use rediss://`
    : '; TLS may not match: the URL does not ask for TLS (redis://); if the server uses TLS, use rediss://';
}
