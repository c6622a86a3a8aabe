import type { WsErrorCode } from './errors.js';
import type { JsonValue, ServerAckFrame } from './frames.js';
import {
  type BeginResult,
  checkOutcome,
  type OpenResult,
  type Outcome,
  type SessionRef,
  type SessionStateStore,
} from './session-state.js';

/** A client `msg` frame's fields (docs/ws-protocol.md section 2), already parsed and bounded. */
export interface InboundMessage {
  readonly id: string;
  readonly seq: number;
  readonly type: string;
  readonly body: JsonValue;
}

/**
 * Runs one message, at most one at a time per session. Returns its outcome (a limiter answers
 * `limited`, a dispatcher `rejected` UNKNOWN_TYPE or BODY_REFUSED); a throw, or an answer that is
 * not an outcome, is `rejected` HANDLER_FAILED.
 */
export type InboundHandler = (message: InboundMessage, again: boolean) => Outcome | Promise<Outcome>;

/**
 * Thrown by a handler that cannot decide the message now (the store that decides its limits
 * failed): nothing is recorded, the connection ends INTERNAL, and the client's re-send is
 * decided afresh (its begin answers `again`).
 */
export class UndecidedError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UndecidedError';
  }
}

export interface InboundOptions {
  readonly store: SessionStateStore;
  readonly ref: SessionRef;
  /** What `store.open(ref)` answered for this connection. */
  readonly opened: OpenResult;
  readonly handler: InboundHandler;
  /** Sends an ack on this connection. */
  readonly send: (ack: ServerAckFrame) => void;
  /** Ends the connection with an error frame of `code`; the driver takes no frame after it. */
  readonly fail: (code: WsErrorCode, message: string) => void;
}

/** The shared empty `waiting` of every driver: never written (replaced by a Map before a set). */
const NO_WAITING: Map<number, InboundMessage> = new Map();

/**
 * The client messages of one connection: every seq gets one outcome, decided in seq order on the
 * session's state in the store, and acked; a re-send gets its outcome again, marked duplicate.
 *
 * Frames are taken in arrival order, one at a time (so never two handlers of the session at once;
 * a second connection of the session is another driver: the store's writer token refuses the
 * replaced one, and a seq whose handler still runs there is `busy` here until it is recorded, or
 * its lease runs out; later frames wait behind it). A frame past the next expected seq waits here for the gap, within `maxInFlight`
 * of the last seq with an outcome. The frames received and not yet decided are at most
 * `maxInFlight` (the client's own bound on unacked frames): beyond, TOO_MANY_IN_FLIGHT, so one
 * client never holds more than `maxInFlight` frames of this node's memory.
 */
export class InboundDriver {
  private readonly o: InboundOptions;
  private readonly maxInFlight: number;
  /**
   * The next seq without an outcome, as far as this connection knows: it moves it, or learns of it
   * from a `decided` answer (the seq a replaced connection's lease recorded).
   */
  private next: number;
  private readonly inbox: InboundMessage[] = [];
  /**
   * Frames past the next seq, waiting for the gap, by seq: the shared empty Map until the first
   * one (frames come out of order only around a reconnect, so an idle connection holds no Map).
   */
  private waiting: Map<number, InboundMessage> = NO_WAITING;
  private busy: Promise<void> | null = null;
  /** The frame being decided (taken from the inbox or the waiting ones), if any. */
  private current: InboundMessage | null = null;
  private ended = false;

  constructor(options: InboundOptions) {
    this.o = options;
    this.maxInFlight = options.store.maxInFlight;
    this.next = options.opened.nextSeq;
  }

  /** Whether the driver failed or was closed: it takes no more frames. */
  get closed(): boolean {
    return this.ended;
  }

  /** A `msg` frame of this connection, in arrival order. */
  push(message: InboundMessage): void {
    if (this.ended) return;
    if (this.inbox.length + this.waiting.size + (this.current === null ? 0 : 1) >= this.maxInFlight) {
      this.end('TOO_MANY_IN_FLIGHT', `more than ${this.maxInFlight} messages without an ack`, message);
      return;
    }
    this.inbox.push(message);
    if (this.busy === null) this.busy = this.pump();
  }

  /** Resolves when every frame pushed so far is decided or waits for a gap (or the driver ended). */
  async idle(): Promise<void> {
    while (this.busy !== null) await this.busy;
  }

  /** The connection ended: frames not yet taken are dropped (the client re-sends them). */
  close(): void {
    this.ended = true;
    this.inbox.length = 0;
    this.waiting = NO_WAITING;
  }

  private async pump(): Promise<void> {
    try {
      for (let m = this.inbox.shift(); m !== undefined && !this.ended; m = this.inbox.shift()) {
        // `current` is set here and cleared by `take` (or the catch): one async frame per message.
        this.current = m;
        await this.take(m);
        this.current = null;
        if (this.waiting.size === 0) continue;
        for (
          let w = this.waiting.get(this.next);
          w !== undefined && !this.ended;
          w = this.waiting.get(this.next)
        ) {
          this.waiting.delete(w.seq);
          this.current = w;
          await this.take(w);
          this.current = null;
        }
      }
    } catch (err) {
      this.current = null;
      this.end('INTERNAL', `session state store failed: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      this.busy = null;
    }
  }

  private async take(m: InboundMessage): Promise<void> {
    if (this.waiting.size > 0) {
      const parked = this.waiting.get(m.seq);
      if (parked !== undefined) {
        if (parked.id !== m.id) this.end('BAD_SEQ', `seq ${m.seq} already waits under another id`, m);
        return;
      }
      for (const w of this.waiting.values())
        if (w.id === m.id) return this.end('BAD_SEQ', `id already waits under seq ${w.seq}`, m);
    }
    if (m.seq > this.next) {
      if (m.seq - (this.next - 1) > this.maxInFlight)
        return this.end(
          'TOO_MANY_IN_FLIGHT',
          `seq ${m.seq} is more than ${this.maxInFlight} past ${this.next - 1}`,
          m,
        );
      this.current = null;
      if (this.waiting === NO_WAITING) this.waiting = new Map();
      this.waiting.set(m.seq, m);
      return;
    }
    const { store, ref, opened } = this.o;
    const begun = await this.begin(m);
    if (begun === null) return;
    // Once `run`, the handler runs and records even if the connection ended meanwhile: the lease
    // is this connection's, and a lease left unrecorded would hold the re-send on the next
    // connection for `leaseMs`.
    if (begun.kind === 'decided') {
      this.next = Math.max(this.next, m.seq + 1);
      return this.reply(ack(m, begun.outcome, true));
    }
    if (begun.kind !== 'run') return this.refused(begun, m);
    const outcome = await this.run(m, begun.again === true);
    if (outcome === null) return;
    const recorded = await store.record(ref, opened.token, m.seq, m.id, outcome);
    if (this.ended) return;
    if (recorded.kind === 'recorded') {
      this.next = m.seq + 1;
      return this.reply(ack(m, outcome, false));
    }
    if (recorded.kind === 'replaced')
      return this.end('SESSION_REPLACED', 'a newer connection took this session', m);
    this.end('INTERNAL', `the outcome of seq ${m.seq} could not be recorded (${recorded.kind})`, m);
  }

  /**
   * `begin`, asked again while another connection's handler holds the seq: polled, since the
   * holder's record is usually much sooner than its lease's end. Bounded: the holder, replaced,
   * cannot renew its lease, so after `leaseMs` the seq is decided or this writer's to run; a store
   * still busy after twice that is broken (INTERNAL). Null when the driver ended (unless `run`).
   */
  private async begin(m: InboundMessage): Promise<Exclude<BeginResult, { kind: 'busy' }> | null> {
    const { store, ref, opened } = this.o;
    // The clock is read only once a seq is busy (rare): the bound counts from the first `busy`
    // answer, one store round trip later than the first ask, immaterial against 2 x leaseMs.
    let giveUp = 0;
    for (let wait: number = BUSY_POLL_MS.first; ; wait = Math.min(2 * wait, BUSY_POLL_MS.max)) {
      const begun = await store.begin(ref, opened.token, m.seq, m.id);
      if (begun.kind === 'run') return begun;
      if (this.ended) return null;
      if (begun.kind !== 'busy') return begun;
      // The monotonic clock: a wall clock stepped by NTP must not end (or stretch) the wait.
      if (giveUp === 0) giveUp = performance.now() + 2 * store.leaseMs;
      if (performance.now() > giveUp) {
        this.end('INTERNAL', `seq ${m.seq} stayed busy past twice its lease`, m);
        return null;
      }
      await sleep(Math.max(1, Math.min(wait, begun.retryAfterMs)));
      if (this.ended) return null;
    }
  }

  /** The frame is decided once its ack is sent: the client may send the next one at once. */
  private reply(frame: ServerAckFrame): void {
    this.current = null;
    this.o.send(frame);
  }

  private refused(
    begun: Exclude<BeginResult, { kind: 'run' | 'decided' | 'busy' }>,
    m: InboundMessage,
  ): void {
    const [code, message]: [WsErrorCode, string] =
      begun.kind === 'conflict'
        ? ['BAD_SEQ', 'the seq or the id already has an outcome under another id or seq']
        : begun.kind === 'forgotten'
          ? ['BAD_SEQ', 'the seq is older than the outcomes kept (its ack was sent)']
          : begun.kind === 'replaced'
            ? ['SESSION_REPLACED', 'a newer connection took this session']
            : begun.kind === 'expired'
              ? ['INTERNAL', 'the session state expired; reconnect']
              : // ahead or too-far for a seq at or below this writer's next: store and writer disagree.
                ['INTERNAL', `the session state answered ${begun.kind}`];
    this.end(code, message, m);
  }

  /** The handler's outcome; null when it could not decide (UndecidedError: the driver ended). */
  private async run(m: InboundMessage, again: boolean): Promise<Outcome | null> {
    try {
      const outcome = await this.o.handler(m, again);
      checkOutcome(outcome);
      return outcome;
    } catch (err) {
      if (err instanceof UndecidedError) {
        // Given back, so the re-send is decided afresh (limits taken) and does not wait out the
        // lease; if the store fails this too, the re-send waits for the lease and runs `again`.
        const { store, ref, opened } = this.o;
        await store.release(ref, opened.token, m.seq).catch(() => false);
        this.end('INTERNAL', err.message, m);
        return null;
      }
      return { outcome: 'rejected', code: 'HANDLER_FAILED' };
    }
  }

  private end(code: WsErrorCode, message: string, m?: InboundMessage): void {
    if (this.ended) return;
    this.close();
    this.o.fail(code, m === undefined ? message : `${message} (seq ${m.seq}, id ${m.id})`);
  }
}

/**
 * The polls of a busy seq: the first after 5 ms (a handler of a few ms is acked at once), doubling
 * to 200 ms, so a waiting re-send costs at most 5 store calls a second and is acked at most 200 ms
 * after the holder records.
 */
const BUSY_POLL_MS = Object.freeze({ first: 5, max: 200 });

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The ack of `m`: its outcome's fields (checked by checkOutcome) in place of a spread and a copy. */
function ack(m: InboundMessage, outcome: Outcome, duplicate: boolean): ServerAckFrame {
  const frame: Record<string, unknown> = { op: 'ack', seq: m.seq, id: m.id, outcome: outcome.outcome };
  if (outcome.outcome !== 'handled') frame.code = outcome.code;
  if (outcome.outcome === 'limited') frame.retryAfterMs = outcome.retryAfterMs;
  if (duplicate) frame.duplicate = true;
  return frame as unknown as ServerAckFrame;
}
