import { NoReplyError, NotSentError } from '../redis/bounded-client.js';
import type { RedisLike } from '../redis/eval.js';

/**
 * What the connected server offers beyond Redis 7.0 (the floor) for streams. Each flag is read from
 * the server's own command docs when it has them (`COMMAND DOCS`: a fork or a build can carry a
 * feature under another version number), else from its version.
 */
export interface StreamFeatures {
  /** `redis_version` of INFO server, `undefined` when INFO was refused (an ACL, a proxy). */
  readonly version: string | undefined;
  /** `XTRIM ... ACKED` (Redis 8.2): trims only entries every group has read and acknowledged. */
  readonly trimAcked: boolean;
  /** `XADD ... ACKED` (Redis 8.2): the same, for the trimming an XADD does. */
  readonly addAcked: boolean;
  /** `XACKDEL` (Redis 8.2): acknowledge and delete in one command. */
  readonly ackDel: boolean;
  /** `XADD ... IDMP producer iid` (Redis 8.6): the server drops a repeated idempotent id. */
  readonly addIdempotent: boolean;
  /** Where the flags came from: the command docs, or the version alone. */
  readonly source: 'command-docs' | 'version';
}

// One cached answer per client object: the features of a server do not change while it runs, and
// detection costs two round trips. A WeakMap, so a dropped client takes its entry with it.
const cache = new WeakMap<object, Promise<StreamFeatures>>();

/**
 * The stream features of the server `client` talks to, detected once per client and cached. A
 * failed detection is not cached (the next call tries again).
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { streamFeatures } from 'onceflow/streams';
 * const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
 * const features = await streamFeatures(redis);
 * // false on Redis 7.0, true on 8.2 and later
 * typeof features.trimAcked; // 'boolean'
 * (await streamFeatures(redis)) === features; // true
 * redis.disconnect();
 * ```
 */
export function streamFeatures(client: RedisLike): Promise<StreamFeatures> {
  return featuresOf(client, client);
}

/**
 * {@link streamFeatures} of `client`, cached by it, asked through `via` (the client with its
 * waits bounded: see boundedClient) when they are not known yet.
 */
export function featuresOf(client: RedisLike, via: RedisLike): Promise<StreamFeatures> {
  let found = cache.get(client);
  if (!found) {
    found = detect(via);
    cache.set(client, found);
    found.catch(() => {
      if (cache.get(client) === found) cache.delete(client);
    });
  }
  return found;
}

/**
 * Drops the cached features of `client`: after a failover to a server of another version, or when
 * a command built from them was refused as a syntax error (the next {@link streamFeatures} asks
 * the server again).
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { forgetStreamFeatures, streamFeatures } from 'onceflow/streams';
 * const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
 * const before = await streamFeatures(redis);
 * forgetStreamFeatures(redis); // after a failover: the next call asks the server again
 * (await streamFeatures(redis)) === before; // false
 * redis.disconnect();
 * ```
 */
export function forgetStreamFeatures(client: RedisLike): void {
  cache.delete(client);
}

async function detect(client: RedisLike): Promise<StreamFeatures> {
  let failed: unknown;
  const version = await client.call('INFO', 'server').then(
    (info) => /^redis_version:(\S+)/m.exec(String(info))?.[1],
    (err: unknown) => {
      failed = err;
      return undefined;
    },
  );
  // No answer at all within the wait (bounded-client.ts): nothing is known, and nothing is cached;
  // a server that refuses INFO (a proxy, an ACL) may still answer COMMAND DOCS below.
  if (failed instanceof NotSentError || failed instanceof NoReplyError) throw failed;
  const docs = await client.call('COMMAND', 'DOCS', 'XTRIM', 'XADD', 'XACKDEL').then(
    (reply) => commandTokens(reply),
    () => undefined,
  );
  if (docs) {
    return Object.freeze({
      version,
      trimAcked: docs.get('xtrim')?.has('ACKED') ?? false,
      addAcked: docs.get('xadd')?.has('ACKED') ?? false,
      ackDel: docs.has('xackdel'),
      addIdempotent: docs.get('xadd')?.has('IDMP') ?? false,
      source: 'command-docs',
    });
  }
  const v = parseVersion(version);
  const atLeast = (major: number, minor: number) =>
    v !== undefined && (v[0] > major || (v[0] === major && v[1] >= minor));
  return Object.freeze({
    version,
    trimAcked: atLeast(8, 2),
    addAcked: atLeast(8, 2),
    ackDel: atLeast(8, 2),
    addIdempotent: atLeast(8, 6),
    source: 'version',
  });
}

/** `[major, minor, patch]` of a version string, `undefined` when it is not one. */
export function parseVersion(text: string | undefined): [number, number, number] | undefined {
  const m = text === undefined ? null : /^(\d+)\.(\d+)(?:\.(\d+))?/.exec(text);
  if (!m) return undefined;
  return [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
}

/**
 * The argument tokens each command's docs name, by lower-case command name. The reply (RESP2) is
 * `[name, doc, name, doc, ...]`, a doc a flat list of key/value pairs whose `arguments` nest to any
 * depth; a token is the value after a `token` key anywhere in it. A command the server does not
 * know is absent from the reply. `undefined` when the reply has not that shape.
 */
export function commandTokens(reply: unknown): Map<string, Set<string>> | undefined {
  if (!Array.isArray(reply) || reply.length % 2 !== 0) return undefined;
  const out = new Map<string, Set<string>>();
  for (let i = 0; i < reply.length; i += 2) {
    const name = text(reply[i]);
    if (name === undefined) return undefined;
    const tokens = new Set<string>();
    collectTokens(reply[i + 1], tokens);
    out.set(name.toLowerCase(), tokens);
  }
  return out;
}

// A doc is a list of key/value pairs (keys are strings); the value of `arguments` is a list of
// such docs. Only a value under a `token` key is a token: a summary that reads "token" is text.
function collectTokens(node: unknown, into: Set<string>): void {
  if (!Array.isArray(node)) return;
  if (text(node[0]) === undefined) {
    for (const item of node) collectTokens(item, into);
    return;
  }
  for (let i = 0; i + 1 < node.length; i += 2) {
    if (text(node[i]) === 'token') {
      const token = text(node[i + 1]);
      if (token !== undefined) into.add(token.toUpperCase());
    } else collectTokens(node[i + 1], into);
  }
}

function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  return undefined;
}
