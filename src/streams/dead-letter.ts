import { InvalidArgumentError } from '../core/errors.js';
import { isPlainObject, knownKeys } from '../core/validate.js';
import { evalScript, type RedisLike } from '../redis/eval.js';
import { scripts } from '../redis/scripts.generated.js';

/**
 * Why an event was dead-lettered. The producer writes `publish-failed` (its tries ran out on
 * passing errors) and `terminal-error` (a failure no retry fixes); the consumer `max-deliveries`,
 * `handler-error`, `terminal-error` and, on its ledger path, `ledger-stale` (an entry below the
 * owner's horizon whose journal could not prove it new: `ledger.resolve` answered `unknown`).
 */
export type DeadLetterReason =
  | 'publish-failed'
  | 'max-deliveries'
  | 'handler-error'
  | 'terminal-error'
  | 'ledger-stale';

/** One dead-letter entry, as both producer and consumer write it. */
export interface DeadLetter {
  readonly reason: DeadLetterReason;
  /** Tries made (publishes) or deliveries counted (consumer). */
  readonly attempts: number;
  readonly firstError: string;
  readonly lastError: string;
  /** `producer:<name>`, or `<stream>/<group>/<entry id>` for a consumer's. */
  readonly origin: string;
  /** The event's encoded text (jsonSerializer: what the stream's field `e` holds). */
  readonly event: string;
  /** The event's idempotency id, when it has one. */
  readonly id?: string;
  /**
   * What the last error was, as `classifyStreamError`'s `kind` names it (`connection`,
   * `not-replicated`, `WRONGTYPE`, ...): the producer's letters have it.
   */
  readonly kind?: string;
}

// An error message is kept to 1024 bytes of UTF-8: enough for a Redis reply or a stack's first
// line, and a poison event that fails with a huge message cannot make each dead letter huge.
export const DEAD_LETTER_ERROR_BYTES = 1024;

/** `text` cut to at most `maxBytes` of UTF-8, never inside a character. */
export function truncateUtf8(text: string, maxBytes = DEAD_LETTER_ERROR_BYTES): string {
  if (Buffer.byteLength(text, 'utf8') <= maxBytes) return text;
  const bytes = Buffer.from(text, 'utf8');
  let end = maxBytes;
  // Back off continuation bytes (10xxxxxx) so the cut falls before a character's first byte.
  while (end > 0 && ((bytes[end] as number) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}

/**
 * The fields of a dead-letter entry, flat (`field, value, ...`) as XADD takes them, without `at`
 * (which {@link writeDeadLetter} stamps from Redis TIME). Error messages are cut to
 * {@link DEAD_LETTER_ERROR_BYTES}.
 */
export function deadLetterFields(letter: DeadLetter): string[] {
  if (!isPlainObject(letter)) throw new InvalidArgumentError('letter', 'a DeadLetter object', letter);
  knownKeys('letter', letter, [
    'reason',
    'attempts',
    'firstError',
    'lastError',
    'origin',
    'event',
    'id',
    'kind',
  ]);
  if (!Number.isSafeInteger(letter.attempts) || letter.attempts < 0)
    throw new InvalidArgumentError('attempts', 'a non-negative safe integer', letter.attempts);
  const fields = [
    'reason',
    letter.reason,
    'attempts',
    String(letter.attempts),
    'first_error',
    truncateUtf8(letter.firstError),
    'last_error',
    truncateUtf8(letter.lastError),
    'origin',
    letter.origin,
    'event',
    letter.event,
  ];
  if (letter.id !== undefined) fields.push('id', letter.id);
  if (letter.kind !== undefined) fields.push('kind', letter.kind);
  return fields;
}

/**
 * Appends a dead letter to `deadStream` in one script (stream-dead-letter.lua), `at` stamped with
 * Redis TIME. Resolves to the dead letter's entry id; rejects with the driver's error.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { parseDeadLetter, writeDeadLetter } from 'onceflow/streams';
 * const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
 * const dead = `example:${process.pid}:orders:dead`;
 * const entryId = await writeDeadLetter(redis, dead, {
 *   reason: 'publish-failed', attempts: 8, firstError: 'Connection is closed.',
 *   lastError: 'Connection is closed.', origin: 'producer:orders', event: '{"n":1}',
 * });
 * const [[id, fields]] = await redis.xrange(dead, '-', '+');
 * id === entryId; // true
 * parseDeadLetter(fields).reason; // 'publish-failed'
 * await redis.del(dead);
 * redis.disconnect();
 * ```
 */
export async function writeDeadLetter(
  client: RedisLike,
  deadStream: string,
  letter: DeadLetter,
): Promise<string> {
  return String(await evalScript(client, scripts.streamDeadLetter, [deadStream], deadLetterFields(letter)));
}

/** A dead-letter entry read back (XRANGE of the dead-letter stream): every field as text. */
export function parseDeadLetter(fields: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) out[fields[i] as string] = fields[i + 1] as string;
  return out;
}
