import type { Resume, ServerMsgFrame, WelcomeFrame } from '../frames.js';

/**
 * The client's place in the user's stream: the last offset processed and its epoch. It is all the
 * dedup state there is (section 4: offsets have no gap within an epoch, so "at or below the last"
 * is "seen"), and it is what `hello.resume` carries.
 */
export class Inbox {
  #position: Resume | undefined;
  #acked = 0; // the highest offset acked on the current connection

  constructor(resume: Resume | undefined) {
    this.#position = resume;
  }

  get position(): Resume | undefined {
    return this.#position;
  }

  /**
   * Recovered in the same epoch, the server starts where this client is; otherwise the welcome's
   * position replaces the client's (nothing of a missed range is ever sent). Acks on the new
   * connection start above it: an ack of an offset the connection was never sent is BAD_ACK.
   */
  welcome(w: WelcomeFrame): void {
    const mine = this.#position;
    this.#position =
      w.recovered && mine?.epoch === w.epoch && mine.offset >= w.offset
        ? mine
        : { offset: w.offset, epoch: w.epoch };
    this.#acked = this.#position.offset;
  }

  /**
   * The resume position of a server's `error` frame, unless this client processed further in the
   * same epoch: its own offset never moves back within an epoch, or repeats would pass as new.
   */
  adopt(resume: Resume): void {
    const mine = this.#position;
    if (mine?.epoch === resume.epoch && mine.offset >= resume.offset) return;
    this.#position = { offset: resume.offset, epoch: resume.epoch };
  }

  /**
   * `'new'`: the next offset, now the position (deliver it); `'repeat'`: processed already (drop
   * it); otherwise what breaks the protocol (another epoch, a gap), for the caller to reconnect on.
   */
  accept(m: ServerMsgFrame): 'new' | 'repeat' | { problem: string } {
    const at = this.#position;
    if (!at || m.epoch !== at.epoch) {
      return { problem: `a message of epoch ${m.epoch} on a connection of epoch ${at?.epoch}` };
    }
    if (m.offset <= at.offset) return 'repeat';
    if (m.offset !== at.offset + 1) return { problem: `message ${m.offset} came after ${at.offset}` };
    this.#position = { offset: m.offset, epoch: m.epoch };
    return 'new';
  }

  /** The offset to ack now, or `undefined` when every processed offset is acked on this connection. */
  takeAck(): number | undefined {
    const offset = this.#position?.offset;
    if (offset === undefined || offset <= this.#acked) return undefined;
    this.#acked = offset;
    return offset;
  }
}
