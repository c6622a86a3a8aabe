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

/** An error's code and message, as one string to match. */
function errorText(error: unknown): string {
  const e = error as { code?: unknown; message?: unknown } | undefined;
  return `${typeof e?.code === 'string' ? e.code : ''} ${typeof e?.message === 'string' ? e.message : ''}`;
}

// The errors a TLS mismatch shows as: for a URL that asks for TLS, a handshake that times out or
// is answered with something that is not TLS; for one that does not, a connection the TLS server
// resets or answers with bytes that are not RESP.
const TLS_URL_MISMATCH =
  /ETIMEDOUT|ECONNRESET|EPROTO|wrong version number|packet length too long|before secure/i;
const PLAIN_URL_MISMATCH = /ECONNRESET|EPIPE|Protocol error/i;

/** What a probe found: its protocol answered, or a connection and no answer, or no connection. */
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
    socket.once('close', () => done(false));
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
    socket.once('close', () => done(false));
    socket.once('secureConnect', () => done(true));
  });
}

/**
 * A sentence to add to a connection error of `url` when TLS does not match on both ends, or `''`.
 * Said when one probe of the server bears it out (`the server ... answers without it`), or as a
 * possibility when a rediss:// handshake timed out on a server that answers neither protocol.
 * Never for a server that closes connections for another reason (too many clients, a proxy).
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
  const text = errorText(error);
  if (!(tls ? TLS_URL_MISMATCH : PLAIN_URL_MISMATCH).test(text)) return '';
  const host = parsed.hostname.replace(/^\[|\]$/g, '') || 'localhost';
  const port = parsed.port === '' ? 6379 : Number(parsed.port);
  const where = `${host}:${port}`;
  if (!tls) {
    return (await probeTls(host, port)) === 'answered'
      ? `; TLS does not match: the server at ${where} speaks TLS and the URL does not ask for it: use rediss://`
      : '';
  }
  const probe = await probePlain(host, port);
  if (probe === 'answered') {
    return `; TLS does not match: the URL asks for TLS (rediss://) and the server at ${where} answers without it: use redis://`;
  }
  return probe === 'silent' && text.includes('ETIMEDOUT')
    ? '; TLS may not match: the URL asks for TLS (rediss://); if the server does not use TLS, use redis://'
    : '';
}
