import type { JsonValue, Resume, WelcomeFrame } from '../frames.js';
import type { WsClientError } from './errors.js';
import type { SendResult, UnknownMessage } from './outbox.js';

/** `connecting` (first connect), `open` (welcomed), `reconnecting` (after a drop), `closed` (for good). */
export type ClientState = 'connecting' | 'open' | 'reconnecting' | 'closed';

/** A server message, delivered once per offset, in offset order, across reconnects. */
export interface ServerMessage {
  readonly offset: number;
  readonly epoch: string;
  readonly type: string;
  readonly body: JsonValue;
}

/** The events of a {@link Client} and what each listener receives. */
export interface ClientEvents {
  message: (message: ServerMessage) => void;
  welcome: (welcome: WelcomeFrame) => void;
  state: (state: ClientState) => void;
  unknown: (messages: readonly UnknownMessage[]) => void;
  error: (error: WsClientError) => void;
}

/** Options of one `send()`. */
export interface SendOptions {
  /** The message's id, its dedup key within the session (1-128 of `[A-Za-z0-9._:-]`); default random. */
  readonly id?: string;
}

/** A client of an onceflow gateway; see {@link createClient}. */
export interface Client {
  /** Adds a listener; returns the function that removes it. */
  on<E extends keyof ClientEvents>(event: E, listener: ClientEvents[E]): () => void;
  /** Sends a message to the handler of `type`; resolves with its outcome once the server acks it. */
  send(type: string, body: unknown, options?: SendOptions): Promise<SendResult>;
  /** Closes with 1000 and stops reconnecting; pending sends reject with CLOSED. */
  close(): Promise<void>;
  readonly state: ClientState;
  readonly session: string;
  /** The last welcome's `recovered` (`undefined` before the first welcome). */
  readonly recovered: boolean | undefined;
  /** The last processed position of the user's stream: save it to resume from after a restart. */
  readonly position: Resume | undefined;
  /** Messages sent and awaiting their ack, and messages waiting to be sent. */
  readonly pending: { readonly inFlight: number; readonly queued: number };
}

/** The part of a WebSocket (browser or `ws`) the client uses. */
export interface SocketLike {
  readonly readyState: number;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}
