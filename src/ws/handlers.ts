import { InvalidOptionError } from '../core/errors.js';
import { isPlainObject } from '../core/validate.js';
import type { JsonValue } from './frames.js';

/** A client message as a handler sees it. */
export interface GatewayMessage {
  readonly id: string;
  readonly seq: number;
  readonly type: string;
  readonly body: JsonValue;
  /** Who the connection acts for (what `auth` answered). */
  readonly user: string;
  readonly session: string;
  readonly ip: string;
  /**
   * The message's identity across nodes and re-sends: every delivery of one message (its user,
   * session and id) has the same key, and two messages never share one. Use it as the ledger `signature` or the
   * idempotency `key` of the handler's effect, and the effect is exactly once even when a node
   * dies mid-handler (the re-sent message runs the handler again, and the store answers
   * `duplicate`/`replayed`). At most 464 bytes: within both bounds (1024 and 512).
   */
  readonly key: string;
}

/** Runs a message's effect. A throw is `rejected` HANDLER_FAILED; a {@link BodyRefusedError} is BODY_REFUSED. */
export type MessageHandler = (message: GatewayMessage) => unknown;

/** A handler with a check of its body, run first: `false` or a string (why) is BODY_REFUSED. */
export interface HandlerSpec {
  readonly handle: MessageHandler;
  readonly validate?: (body: JsonValue) => boolean | string;
}

export type Handlers = Readonly<Record<string, MessageHandler | HandlerSpec>>;

/** Thrown by a handler that refuses the body it was given: the ack is `rejected` BODY_REFUSED. */
export class BodyRefusedError extends Error {
  constructor(message = 'body refused') {
    super(message);
    this.name = 'BodyRefusedError';
  }
}

/** Every handler a function or `{ handle, validate? }`. */
export function checkHandlers(handlers: unknown): Handlers {
  if (!isPlainObject(handlers))
    throw new InvalidOptionError('handlers', 'an object of type -> handler', handlers);
  for (const [type, h] of Object.entries(handlers)) {
    if (typeof h === 'function') continue;
    if (
      isPlainObject(h) &&
      typeof h.handle === 'function' &&
      (h.validate === undefined || typeof h.validate === 'function')
    )
      continue;
    throw new InvalidOptionError(`handlers.${type}`, 'a function or { handle, validate? }', h);
  }
  return handlers as Handlers;
}

/**
 * `key` of {@link GatewayMessage}: length-prefixed user (a user may hold `:`), then the session
 * and id (whose charsets have no `:` in the session). 3 + 3 + 1 + 256 + 1 + 64 + 1 + 128 = 457.
 */
export function messageKey(user: string, session: string, id: string): string {
  return `ws:${user.length}:${user}:${session}:${id}`;
}
