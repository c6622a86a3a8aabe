import type { Duration } from '../core/duration.js';
import { InvalidArgumentError, InvalidOptionError } from '../core/errors.js';
import { timerDuration } from '../core/timer-delay.js';
import { isPlainObject, keysOf, knownKeys, positiveInt } from '../core/validate.js';

/** Options of {@link createSendPolicy}. Sizes in bytes. */
export interface SendPolicyOptions {
  /**
   * Pause above this `bufferedAmount`. Default 1 MiB: about 1 s of a 1 MB/s client; a socket that
   * far behind gains nothing from more bytes in its kernel and `ws` buffers.
   */
  highWater?: number;
  /**
   * Resume at or below this `bufferedAmount`. Default 256 KiB: a quarter of `highWater` still in
   * flight (~250 ms at 1 MB/s) keeps the socket busy while the queue refills it, and the gap to
   * `highWater` keeps a client near the mark from pausing and resuming on every frame. When
   * `highWater` is set lower, the default is a quarter of it.
   */
  lowWater?: number;
  /**
   * The most a connection may hold on this node: `bufferedAmount` + queued + the next frame. Over
   * it the connection is closed. Default 2 MiB: `highWater` plus as much again of queue (~1 s more
   * at 1 MB/s for a burst to ride through). The node's worst case is `cap` x slow connections
   * (2 GiB for 1000 stuck at once): lower it when a node serves many connections on little memory.
   * It must also exceed the largest frame sent. When `highWater` is set higher, the default is
   * twice it.
   */
  cap?: number;
  /**
   * The longest a connection may stay paused (above `highWater` without getting down to
   * `lowWater`). Default `'5s'`: longer than a phone's handover or a client's GC pause; past it
   * the client is not keeping up, and resuming from its acknowledged offset costs less than
   * holding its queue. Judged at each decision: a gateway asks on every frame and, while paused,
   * every 25 ms (`frameBytes: 0`), so a paused connection with nothing new is judged too.
   * Bounds: up to 2^31 - 1 ms.
   */
  grace?: Duration;
}

const SEND_POLICY_OPTIONS = keysOf<SendPolicyOptions>({
  highWater: true,
  lowWater: true,
  cap: true,
  grace: true,
});

/** What a connection's state is, at a decision. Times are monotonic ms. */
export interface SendState {
  /** The socket's `bufferedAmount`. */
  bufferedAmount: number;
  /** Bytes held in this connection's own queue, not yet written to the socket. */
  queuedBytes: number;
  /** The frame about to be sent, or 0 when only asking whether the queue may be flushed. */
  frameBytes: number;
  now: number;
}

/** The WebSocket close code "Try Again Later" (RFC 6455 §7.4.1, IANA registry). */
export const TRY_AGAIN_LATER = 1013 as const;

/**
 * `send`: write the queue, then the frame, to the socket. `queue`: hold the frame (and the queue).
 * `close`: close with 1013; the client resumes from `resumeFrom` (`undefined`: from the start of
 * what it subscribed to, having acknowledged nothing).
 */
export type SendDecision<Offset> =
  | { readonly action: 'send' }
  | { readonly action: 'queue' }
  | {
      readonly action: 'close';
      readonly code: typeof TRY_AGAIN_LATER;
      readonly reason: 'over cap' | 'paused past grace';
      readonly resumeFrom: Offset | undefined;
    };

/** The send policy of one connection. */
export interface SendPolicy<Offset> {
  /** Decides about a frame (or, with `frameBytes: 0`, about flushing the queue). */
  decide(state: SendState): SendDecision<Offset>;
  /** Records the latest offset the client acknowledged: where it resumes after a close. */
  acked(offset: Offset): void;
  readonly paused: boolean;
}

const SEND: SendDecision<never> = Object.freeze({ action: 'send' });
const QUEUE: SendDecision<never> = Object.freeze({ action: 'queue' });

/**
 * Bounded sending to one connection, as pure decisions: above `highWater` of `bufferedAmount` new
 * frames are queued, at or below `lowWater` the queue is written again, and a connection whose
 * bytes on this node would pass `cap`, or that stays paused longer than `grace`, is closed with
 * 1013 and the offset it acknowledged last. So `bufferedAmount + queued` never passes `cap` for
 * any frame the policy let through, whatever the client does.
 *
 * Example (internal until the gateway ships; its unit test runs this):
 * ```ts
 * const policy = createSendPolicy<string>({ highWater: 100, lowWater: 20, cap: 300, grace: '1s' });
 * policy.acked('1700000000000-3');
 * policy.decide({ bufferedAmount: 0, queuedBytes: 0, frameBytes: 50, now: 0 }); // { action: 'send' }
 * policy.decide({ bufferedAmount: 120, queuedBytes: 0, frameBytes: 50, now: 10 }); // { action: 'queue' }
 * policy.decide({ bufferedAmount: 200, queuedBytes: 50, frameBytes: 60, now: 20 });
 * // { action: 'close', code: 1013, reason: 'over cap', resumeFrom: '1700000000000-3' }
 * ```
 */
export function createSendPolicy<Offset = string>(options: SendPolicyOptions = {}): SendPolicy<Offset> {
  if (!isPlainObject(options as unknown))
    throw new InvalidOptionError('options', 'an object like { highWater, cap }', options);
  knownKeys('', options, SEND_POLICY_OPTIONS);
  const highWater = positiveInt('highWater', options.highWater ?? DEFAULT_HIGH_WATER);
  const lowWater = positiveInt(
    'lowWater',
    options.lowWater ?? Math.max(1, Math.min(DEFAULT_LOW_WATER, Math.floor(highWater / 4))),
  );
  if (lowWater >= highWater) {
    throw new InvalidOptionError(
      'lowWater',
      `a size below \`highWater\` (${highWater} bytes)`,
      options.lowWater,
    );
  }
  const cap = positiveInt('cap', options.cap ?? Math.max(DEFAULT_CAP, 2 * highWater));
  if (cap < highWater) {
    throw new InvalidOptionError('cap', `a size of at least \`highWater\` (${highWater} bytes)`, options.cap);
  }
  const grace = timerDuration('grace', options.grace ?? DEFAULT_GRACE);

  let paused = false;
  let pausedSince = 0;
  let resumeFrom: Offset | undefined;
  let closed: SendDecision<Offset> | undefined;
  const close = (reason: 'over cap' | 'paused past grace'): SendDecision<Offset> => {
    const decision: SendDecision<Offset> = Object.freeze({
      action: 'close' as const,
      code: TRY_AGAIN_LATER,
      reason,
      resumeFrom,
    });
    closed = decision;
    return decision;
  };

  return {
    decide(state) {
      const buffered = bytes('bufferedAmount', state.bufferedAmount);
      const queued = bytes('queuedBytes', state.queuedBytes);
      const frame = bytes('frameBytes', state.frameBytes);
      if (frame > cap) throw new InvalidArgumentError('frameBytes', `at most \`cap\` (${cap} bytes)`, frame);
      const now = state.now;
      if (typeof now !== 'number' || !Number.isFinite(now)) {
        throw new InvalidArgumentError('now', 'a finite number of monotonic ms', now);
      }
      if (closed !== undefined) return closed;
      if (buffered + queued + frame > cap) return close('over cap');
      if (paused && buffered <= lowWater) paused = false;
      else if (!paused && buffered >= highWater) {
        paused = true;
        pausedSince = now;
      }
      if (paused && now - pausedSince > grace) return close('paused past grace');
      return paused ? QUEUE : SEND;
    },
    acked(offset) {
      resumeFrom = offset;
    },
    get paused() {
      return paused;
    },
  };
}

const DEFAULT_HIGH_WATER = 1024 * 1024;
const DEFAULT_LOW_WATER = 256 * 1024;
const DEFAULT_CAP = 2 * 1024 * 1024;
const DEFAULT_GRACE = 5_000;

function bytes(path: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidArgumentError(path, 'a non-negative safe integer of bytes', value);
  }
  return value;
}
