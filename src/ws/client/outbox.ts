import { InvalidArgumentError } from '../../core/errors.js';
import type { WsAckCode } from '../errors.js';
import { encodeClientFrame, type JsonValue, type ServerAckFrame } from '../frames.js';
import { WS_LIMITS } from '../limits.js';
import { WsClientError } from './errors.js';

/** What `send()` resolves with: the server's outcome for the message (docs/ws-protocol.md, section 2). */
export interface SendResult {
  readonly id: string;
  readonly seq: number;
  /** `handled`: the handler ran once for this id; `limited`/`rejected`: it did not run (or failed), the id is spent. */
  readonly outcome: 'handled' | 'limited' | 'rejected';
  readonly code?: WsAckCode;
  /** For `limited`: when a new message would pass. */
  readonly retryAfterMs?: number;
  /** The ack answered a re-send after a reconnect; the outcome is the original one. */
  readonly duplicate?: boolean;
}

/** A message sent whose fate is unknown: the server no longer held the session when the client came back. */
export interface UnknownMessage {
  readonly id: string;
  readonly seq: number;
  readonly type: string;
  readonly body: JsonValue;
}

interface Pending {
  readonly id: string;
  readonly type: string;
  readonly body: JsonValue;
  seq: number;
  /** The frame as first sent: re-sends repeat it byte for byte (one `(seq, id)` per message). */
  text: string;
  readonly resolve: (result: SendResult) => void;
  readonly reject: (err: unknown) => void;
}

/**
 * The client's messages: `queued` (no seq yet, never sent) and `inFlight` (sent under a seq,
 * awaiting their ack), each bounded. A seq is drawn only when a message leaves the queue, so the
 * seqs in flight are consecutive and a message refused before sending spends none.
 */
export class Outbox {
  // A FIFO with a moving head: `shift()` is O(n) on a large array, and the queue may hold 10^6.
  #queue: (Pending | undefined)[] = [];
  #head = 0;
  readonly #inFlight = new Map<number, Pending>(); // insertion order is seq order
  readonly #ids = new Set<string>();
  /**
   * Ids settled lately, oldest first: the server keeps the last `maxInFlight` ids of the session
   * (at most WS_LIMITS.maxInFlightCap) and closes the connection (BAD_SEQ) on a reused one, so a
   * reuse is refused here, at `send`, instead. 1024 ids x ~40 bytes is ~40 KB at worst.
   */
  readonly #recent = new Set<string>();
  readonly #maxQueued: number;
  #nextSeq = 1;

  constructor(maxQueued: number) {
    this.#maxQueued = maxQueued;
  }

  get queued(): number {
    return this.#queue.length - this.#head;
  }
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /**
   * Queues a message, checked as the server would check it (type, id, JSON body, depth, size
   * under `maxFrameBytes` with the longest seq): a refusal rejects now, nothing queued.
   */
  add(id: string, type: string, body: unknown, maxFrameBytes: number): Promise<SendResult> {
    let probe: string;
    try {
      probe = encodeClientFrame(
        { op: 'msg', id, seq: Number.MAX_SAFE_INTEGER, type, body: body as JsonValue },
        { maxFrameBytes },
      );
    } catch (err) {
      return Promise.reject(err);
    }
    if (this.#ids.has(id)) {
      return Promise.reject(
        new InvalidArgumentError('options.id', 'an id no pending message of this client has', id),
      );
    }
    if (this.#recent.has(id)) {
      return Promise.reject(
        new InvalidArgumentError(
          'options.id',
          `an id not used by the last ${WS_LIMITS.maxInFlightCap} messages of this session (a retry is a new message, with a new id)`,
          id,
        ),
      );
    }
    if (this.queued >= this.#maxQueued) {
      return Promise.reject(
        new WsClientError('QUEUE_FULL', `${this.#maxQueued} messages already wait to be sent (maxQueued)`, {
          outcome: 'not-sent',
        }),
      );
    }
    // The body as it was when sent: a caller that mutates its object later changes nothing.
    const copy = (JSON.parse(probe) as { body: JsonValue }).body;
    return new Promise<SendResult>((resolve, reject) => {
      this.#ids.add(id);
      this.#queue.push({ id, type, body: copy, seq: 0, text: '', resolve, reject });
    });
  }

  /** The frames of every message in flight, in seq order: what a reconnect sends again first. */
  inFlightFrames(): string[] {
    return [...this.#inFlight.values()].map((p) => p.text);
  }

  /**
   * Moves queued messages into flight while fewer than `cap` are, each under the next seq, and
   * returns their frames. One that no longer fits `maxFrameBytes` (a server announced less) is
   * rejected, spending no seq.
   */
  take(cap: number, maxFrameBytes: number): string[] {
    const out: string[] = [];
    while (this.#inFlight.size < cap && this.queued > 0) {
      const p = this.#queue[this.#head] as Pending;
      this.#queue[this.#head++] = undefined;
      try {
        p.text = encodeClientFrame(
          { op: 'msg', id: p.id, seq: this.#nextSeq, type: p.type, body: p.body },
          { maxFrameBytes },
        );
      } catch (err) {
        this.#ids.delete(p.id);
        p.reject(err);
        continue;
      }
      p.seq = this.#nextSeq++;
      this.#inFlight.set(p.seq, p);
      out.push(p.text);
    }
    this.#compact();
    return out;
  }

  /** Settles the message an ack names; `false` when no message in flight has that seq and id. */
  settle(ack: ServerAckFrame): boolean {
    const p = this.#inFlight.get(ack.seq);
    if (!p || p.id !== ack.id) return false;
    this.#inFlight.delete(ack.seq);
    this.#ids.delete(p.id);
    this.#recent.add(p.id);
    if (this.#recent.size > WS_LIMITS.maxInFlightCap)
      this.#recent.delete(this.#recent.values().next().value as string);
    const result: { -readonly [K in keyof SendResult]: SendResult[K] } = {
      id: p.id,
      seq: p.seq,
      outcome: ack.outcome,
    };
    if (ack.outcome !== 'handled') result.code = ack.code;
    if (ack.outcome === 'limited') result.retryAfterMs = ack.retryAfterMs;
    if (ack.duplicate === true) result.duplicate = true;
    p.resolve(result);
    return true;
  }

  /**
   * The session as the server holds it, from `welcome`. `continued` false: every message in
   * flight has an unknown fate: each is rejected with UNKNOWN_OUTCOME and returned, and seqs
   * restart at 1. A continued session with nothing in flight takes up after the server's seq (a
   * client that kept only its session across a reload).
   */
  welcome(continued: boolean, serverSeq: number): UnknownMessage[] {
    if (continued) {
      if (this.#inFlight.size === 0) this.#nextSeq = Math.max(this.#nextSeq, serverSeq + 1);
      return [];
    }
    this.#nextSeq = 1;
    // A new session on the server: it holds no id of the old one.
    this.#recent.clear();
    const unknown: UnknownMessage[] = [];
    for (const p of this.#inFlight.values()) {
      unknown.push({ id: p.id, seq: p.seq, type: p.type, body: p.body });
      this.#ids.delete(p.id);
      p.reject(
        new WsClientError(
          'UNKNOWN_OUTCOME',
          `message ${p.id} (seq ${p.seq}) was sent, and the server no longer holds the session: it may or may not have run`,
          { outcome: 'unknown' },
        ),
      );
    }
    this.#inFlight.clear();
    return unknown;
  }

  /** Rejects every message: those in flight with outcome `unknown`, the queued ones `not-sent`. */
  rejectAll(reason: string, cause: unknown): void {
    for (const p of this.#inFlight.values()) {
      p.reject(new WsClientError('CLOSED', reason, { outcome: 'unknown', cause }));
    }
    for (let i = this.#head; i < this.#queue.length; i++) {
      this.#queue[i]?.reject(new WsClientError('CLOSED', reason, { outcome: 'not-sent', cause }));
    }
    this.#inFlight.clear();
    this.#ids.clear();
    this.#queue = [];
    this.#head = 0;
  }

  #compact(): void {
    // Drop the consumed prefix once it is half the array: amortised O(1) per message.
    if (this.#head > 1024 && this.#head * 2 >= this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    } else if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
    }
  }
}
