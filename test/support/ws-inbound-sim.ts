import fc from 'fast-check';
import type { ServerAckFrame } from '../../src/ws/frames.js';
import { InboundDriver, type InboundMessage } from '../../src/ws/inbound.js';
import type { Outcome, SessionRef, SessionStateStore } from '../../src/ws/session-state.js';

/**
 * A client of the protocol (docs/ws-protocol.md section 3) over drivers on several "nodes" (one
 * store object each, over one shared state), driven by a random schedule: new messages within the
 * in-flight window, connections cut (acks sent after the cut are lost, the node lives on and
 * finishes what it started), reconnects to any node that re-send every unacked frame in a random
 * order, some while the old node still runs a handler. What the property checks is in `checkRun`.
 */
export type SimStep =
  | { readonly kind: 'send'; readonly n: number }
  | { readonly kind: 'cut' }
  | {
      readonly kind: 'reconnect';
      readonly node: number;
      readonly order: readonly number[];
      /** Reconnect at once, while the old node may still run a handler (the re-send waits for it). */
      readonly early: boolean;
    }
  | { readonly kind: 'tick'; readonly n: number };

export function simSteps(nodes: number): fc.Arbitrary<SimStep[]> {
  return fc.array(
    fc.oneof(
      fc.record({ kind: fc.constant('send' as const), n: fc.integer({ min: 1, max: 6 }) }),
      fc.record({ kind: fc.constant('cut' as const) }),
      fc.record({
        kind: fc.constant('reconnect' as const),
        node: fc.integer({ min: 0, max: nodes - 1 }),
        order: fc.array(fc.integer({ min: 0, max: 7 }), { minLength: 1, maxLength: 16 }),
        early: fc.boolean(),
      }),
      fc.record({ kind: fc.constant('tick' as const), n: fc.integer({ min: 0, max: 5 }) }),
    ),
    { maxLength: 30 },
  );
}

/** The outcome the handler gives each seq: every kind, a throw among them. */
export function expectedOutcome(seq: number): Outcome {
  switch (seq % 5) {
    case 0:
      return { outcome: 'rejected', code: 'HANDLER_FAILED' };
    case 1:
      return { outcome: 'limited', code: 'RATE_LIMITED', retryAfterMs: seq };
    case 2:
      return { outcome: 'rejected', code: 'UNKNOWN_TYPE' };
    default:
      return { outcome: 'handled' };
  }
}

export interface SimRun {
  /** Handler runs per seq. */
  readonly runs: Map<number, number>;
  /** Every ack any driver sent, lost or not, in the order sent. */
  readonly emitted: ServerAckFrame[];
  /** Every error any driver ended with. */
  readonly fails: string[];
  /** The seqs the client holds an ack of. */
  readonly acked: Set<number>;
}

const tick = (n: number) => new Promise<void>((r) => (n === 0 ? queueMicrotask(r) : setImmediate(r)));

export async function simulate(
  stores: readonly SessionStateStore[],
  ref: SessionRef,
  steps: readonly SimStep[],
  total: number,
): Promise<SimRun> {
  const maxInFlight = (stores[0] as SessionStateStore).maxInFlight;
  const run: SimRun = { runs: new Map(), emitted: [], fails: [], acked: new Set() };
  let highestSent = 0;
  let conn: { driver: InboundDriver; up: boolean } | null = null;

  const handler = async (m: InboundMessage): Promise<Outcome> => {
    run.runs.set(m.seq, (run.runs.get(m.seq) ?? 0) + 1);
    for (let i = 0; i < m.seq % 3; i++) await tick(i);
    const outcome = expectedOutcome(m.seq);
    if (outcome.outcome === 'rejected' && outcome.code === 'HANDLER_FAILED') throw new Error('boom');
    return outcome;
  };
  const frame = (seq: number): InboundMessage => ({ id: `m-${seq}`, seq, type: 't', body: { seq } });
  const lowestUnacked = () => {
    let s = 1;
    while (run.acked.has(s)) s++;
    return s;
  };
  const send = (n: number) => {
    if (conn === null || !conn.up) return;
    for (let i = 0; i < n; i++) {
      const s = highestSent + 1;
      // The client sends seq s once it holds every ack up to s - maxInFlight.
      if (s > total || s - maxInFlight >= lowestUnacked()) return;
      highestSent = s;
      conn.driver.push(frame(s));
    }
  };
  const cut = () => {
    if (conn === null || !conn.up) return;
    conn.up = false;
    conn.driver.close();
  };
  const drivers: InboundDriver[] = [];
  const reconnect = async (node: number, order: readonly number[], early = false) => {
    const old = conn;
    cut();
    // The old node lives: what it started, it finishes (and records), before the client is back
    // unless `early`.
    if (old !== null && !early) await old.driver.idle();
    const store = stores[node % stores.length] as SessionStateStore;
    const opened = await store.open(ref);
    const c: { driver: InboundDriver; up: boolean } = { driver: null as unknown as InboundDriver, up: true };
    c.driver = new InboundDriver({
      store,
      ref,
      opened,
      handler,
      send: (ack) => {
        run.emitted.push(ack);
        if (c.up) run.acked.add(ack.seq);
      },
      fail: (code, message) => run.fails.push(`${code}: ${message}`),
    });
    conn = c;
    drivers.push(c.driver);
    const unacked: number[] = [];
    for (let s = 1; s <= highestSent; s++) if (!run.acked.has(s)) unacked.push(s);
    const keyed = unacked.map((s, i) => [order[i % Math.max(order.length, 1)] ?? 0, s] as const);
    keyed.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    for (const [, s] of keyed) c.driver.push(frame(s));
  };

  for (const step of steps) {
    if (step.kind === 'send') send(step.n);
    else if (step.kind === 'cut') cut();
    else if (step.kind === 'reconnect') await reconnect(step.node, step.order, step.early);
    else await tick(step.n);
  }
  // The end: reconnect in order and send the rest, until every message has its ack.
  for (let round = 0; round < total + 4 && run.acked.size < total; round++) {
    await reconnect(round, []);
    while (conn !== null && (conn as { up: boolean }).up && run.acked.size < total) {
      const before = run.acked.size;
      send(maxInFlight);
      await (conn as { driver: InboundDriver }).driver.idle();
      if (run.acked.size === before) break;
    }
  }
  for (const d of drivers) await d.idle();
  return run;
}

/** What the protocol promises of a run whose nodes do not die; returns the first broken promise. */
export function checkRun(run: SimRun, total: number): string | null {
  if (run.fails.length > 0) return `a driver failed: ${run.fails[0]}`;
  for (let s = 1; s <= total; s++)
    if (run.runs.get(s) !== 1) return `seq ${s} ran ${run.runs.get(s) ?? 0} times`;
  // A connection cut after a record loses its ack; the re-send then gets it as a duplicate. The
  // others come in seq order, each once.
  const firsts = run.emitted.filter((a) => a.duplicate !== true).map((a) => a.seq);
  if (firsts.some((s, i) => i > 0 && s <= (firsts[i - 1] as number)))
    return `first acks out of seq order: ${firsts.join(',')}`;
  for (const a of run.emitted) {
    const { op: _op, seq, id, duplicate: _d, ...outcome } = a as ServerAckFrame & { duplicate?: true };
    if (id !== `m-${seq}`) return `ack of seq ${seq} names id ${id}`;
    if (JSON.stringify(outcome) !== JSON.stringify(expectedOutcome(seq)))
      return `seq ${seq} acked ${JSON.stringify(outcome)}, expected ${JSON.stringify(expectedOutcome(seq))}`;
  }
  if (run.acked.size !== total) return `the client holds ${run.acked.size} acks of ${total}`;
  return null;
}
