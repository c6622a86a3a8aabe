import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkRun, simSteps, simulate } from '../../test/support/ws-inbound-sim.js';
import type { ServerAckFrame } from './frames.js';
import { InboundDriver, type InboundMessage } from './inbound.js';
import type { Outcome, SessionRef } from './session-state.js';
import { MemorySessionState } from './session-state-memory.js';

const ref: SessionRef = { user: 'u-1', session: 'q8mD2fP0rS1tU4vW6xY9zA' };
const msg = (seq: number, id = `m-${seq}`): InboundMessage => ({ id, seq, type: 't', body: null });

async function connect(
  store: MemorySessionState,
  handler: (m: InboundMessage) => Outcome | Promise<Outcome>,
) {
  const acks: ServerAckFrame[] = [];
  const fails: string[] = [];
  const opened = await store.open(ref);
  const driver = new InboundDriver({
    store,
    ref,
    opened,
    handler,
    send: (a) => acks.push(a),
    fail: (code) => fails.push(code),
  });
  return { driver, acks, fails, opened };
}

const handled = (): Outcome => ({ outcome: 'handled' });

/** A promise a test settles: a handler awaits it to stay running until the test says. */
function gate(): [Promise<void>, () => void] {
  let open: () => void = () => {};
  const held = new Promise<void>((r) => {
    open = r;
  });
  return [held, open];
}

describe('InboundDriver', () => {
  it('gives every seq one outcome in seq order, over random schedules of cuts, reconnects to other nodes and reorders', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 25 }),
        simSteps(3),
        async (m, total, steps) => {
          const store = new MemorySessionState({ maxInFlight: m, sessionTtlMs: 60_000 });
          const run = await simulate([store, store, store], ref, steps, total);
          expect(checkRun(run, total)).toBeNull();
        },
      ),
      { numRuns: 1500 },
    );
  });

  it('acks a frame that waited for the gap after the gap fills, in seq order', async () => {
    const store = new MemorySessionState({ maxInFlight: 4, sessionTtlMs: 60_000 });
    const c = await connect(store, handled);
    c.driver.push(msg(3));
    c.driver.push(msg(2));
    await c.driver.idle();
    expect(c.acks).toEqual([]);
    c.driver.push(msg(1));
    await c.driver.idle();
    expect(c.acks.map((a) => a.seq)).toEqual([1, 2, 3]);
    c.driver.push(msg(2));
    await c.driver.idle();
    expect(c.acks[3]).toEqual({ op: 'ack', seq: 2, id: 'm-2', outcome: 'handled', duplicate: true });
  });

  it('turns a throw, or an answer that is no outcome, into rejected HANDLER_FAILED', async () => {
    const store = new MemorySessionState({ maxInFlight: 4, sessionTtlMs: 60_000 });
    const c = await connect(store, (m) => {
      if (m.seq === 1) throw new Error('boom');
      return { outcome: 'limited' } as unknown as Outcome;
    });
    c.driver.push(msg(1));
    c.driver.push(msg(2));
    await c.driver.idle();
    expect(c.acks).toEqual([
      { op: 'ack', seq: 1, id: 'm-1', outcome: 'rejected', code: 'HANDLER_FAILED' },
      { op: 'ack', seq: 2, id: 'm-2', outcome: 'rejected', code: 'HANDLER_FAILED' },
    ]);
  });

  it('never runs two handlers of a session at once', async () => {
    const store = new MemorySessionState({ maxInFlight: 8, sessionTtlMs: 60_000 });
    let running = 0;
    let most = 0;
    const c = await connect(store, async () => {
      running++;
      most = Math.max(most, running);
      await new Promise((r) => setImmediate(r));
      running--;
      return handled();
    });
    for (let s = 8; s >= 1; s--) c.driver.push(msg(s));
    await c.driver.idle();
    expect(c.acks.map((a) => a.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(most).toBe(1);
  });

  it('refuses a seq already decided under another id, and an id already decided under another seq (BAD_SEQ)', async () => {
    const store = new MemorySessionState({ maxInFlight: 4, sessionTtlMs: 60_000 });
    const a = await connect(store, handled);
    a.driver.push(msg(1));
    a.driver.push(msg(1, 'other'));
    await a.driver.idle();
    expect(a.fails).toEqual(['BAD_SEQ']);
    const b = await connect(store, handled);
    b.driver.push(msg(2, 'm-1'));
    await b.driver.idle();
    expect(b.fails).toEqual(['BAD_SEQ']);
    // The refusals changed no state: seq 2 is still the next one.
    expect(await store.begin(ref, b.opened.token, 2, 'm-2')).toEqual({ kind: 'run' });
  });

  it('refuses a seq more than maxInFlight past the last outcome, and more frames than maxInFlight (TOO_MANY_IN_FLIGHT)', async () => {
    const store = new MemorySessionState({ maxInFlight: 3, sessionTtlMs: 60_000 });
    const a = await connect(store, handled);
    a.driver.push(msg(4));
    await a.driver.idle();
    expect(a.fails).toEqual(['TOO_MANY_IN_FLIGHT']);
    const b = await connect(store, () => new Promise<Outcome>(() => {}));
    for (const s of [1, 2, 3, 1]) b.driver.push(msg(s));
    expect(b.fails).toEqual(['TOO_MANY_IN_FLIGHT']);
  });

  it('a re-send on a new connection waits for the handler still running on the old one: it runs once, the duplicate ack carries its outcome', async () => {
    const store = new MemorySessionState({ maxInFlight: 4, sessionTtlMs: 60_000 });
    const [held, release] = gate();
    let runs = 0;
    const a = await connect(store, async () => {
      runs++;
      await held;
      return { outcome: 'limited', code: 'RATE_LIMITED', retryAfterMs: 7 };
    });
    a.driver.push(msg(1));
    while (runs === 0) await new Promise((r) => setImmediate(r));
    const b = await connect(store, () => {
      runs++;
      return handled();
    });
    b.driver.push(msg(1));
    b.driver.push(msg(2));
    // B's begin of seq 1 answers busy while A's lease is live: B waits, seq 2 behind it.
    expect(await store.begin(ref, b.opened.token, 1, 'm-1')).toMatchObject({ kind: 'busy' });
    await new Promise((r) => setTimeout(r, 30));
    expect(b.acks).toEqual([]);
    expect(runs).toBe(1);
    release();
    await a.driver.idle();
    expect(a.fails).toEqual([]);
    await b.driver.idle();
    expect(b.fails).toEqual([]);
    expect(b.acks).toEqual([
      {
        op: 'ack',
        seq: 1,
        id: 'm-1',
        outcome: 'limited',
        code: 'RATE_LIMITED',
        retryAfterMs: 7,
        duplicate: true,
      },
      { op: 'ack', seq: 2, id: 'm-2', outcome: 'handled' },
    ]);
    expect(runs).toBe(2);
    // A is no longer the writer: its next seq is refused.
    a.driver.push(msg(2));
    await a.driver.idle();
    expect(a.fails).toEqual(['SESSION_REPLACED']);
  });

  it('a handler that outlives its lease may run again on the new connection (at least once)', async () => {
    const clock = { t: 1_000_000 };
    const store = new MemorySessionState({
      maxInFlight: 4,
      sessionTtlMs: 60_000,
      leaseMs: 1000,
      now: () => clock.t,
    });
    const [held, release] = gate();
    let runs = 0;
    const a = await connect(store, async () => {
      runs++;
      await held;
      return handled();
    });
    a.driver.push(msg(1));
    while (runs === 0) await new Promise((r) => setImmediate(r));
    const b = await connect(store, () => {
      runs++;
      return { outcome: 'rejected', code: 'UNKNOWN_TYPE' };
    });
    clock.t += 1000;
    b.driver.push(msg(1));
    await b.driver.idle();
    expect(b.acks).toEqual([{ op: 'ack', seq: 1, id: 'm-1', outcome: 'rejected', code: 'UNKNOWN_TYPE' }]);
    release();
    await a.driver.idle();
    expect(a.fails).toEqual(['SESSION_REPLACED']);
    expect(a.acks).toEqual([]);
    expect(runs).toBe(2);
  });

  it('ends with INTERNAL when the store fails, and takes no frame after', async () => {
    const store = new MemorySessionState({ maxInFlight: 4, sessionTtlMs: 60_000 });
    const c = await connect(store, handled);
    store.begin = () => Promise.reject(new Error('store down'));
    c.driver.push(msg(1));
    await c.driver.idle();
    c.driver.push(msg(2));
    await c.driver.idle();
    expect(c.fails).toEqual(['INTERNAL']);
    expect(c.acks).toEqual([]);
  });
});
