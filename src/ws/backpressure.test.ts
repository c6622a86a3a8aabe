import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSendPolicy, TRY_AGAIN_LATER } from './backpressure.js';

const at = (bufferedAmount: number, queuedBytes: number, frameBytes: number, now = 0) => ({
  bufferedAmount,
  queuedBytes,
  frameBytes,
  now,
});

describe('send policy', () => {
  it('pauses at highWater, stays paused until lowWater (hysteresis), then sends again', () => {
    const p = createSendPolicy({ highWater: 100, lowWater: 20, cap: 1000, grace: '10s' });
    expect(p.decide(at(99, 0, 10))).toEqual({ action: 'send' });
    expect(p.decide(at(100, 0, 10))).toEqual({ action: 'queue' });
    expect(p.paused).toBe(true);
    expect(p.decide(at(50, 10, 10))).toEqual({ action: 'queue' }); // below high, above low: still paused
    expect(p.decide(at(21, 20, 0))).toEqual({ action: 'queue' });
    expect(p.decide(at(20, 20, 0))).toEqual({ action: 'send' }); // flush the queue
    expect(p.paused).toBe(false);
    expect(p.decide(at(60, 0, 10))).toEqual({ action: 'send' });
  });

  it('closes with 1013 and the last acknowledged offset past the cap, and stays closed', () => {
    const p = createSendPolicy<string>({ highWater: 100, lowWater: 20, cap: 300 });
    expect(p.decide(at(0, 0, 50))).toEqual({ action: 'send' });
    p.acked('1-0');
    p.acked('7-2');
    expect(p.decide(at(120, 130, 50))).toEqual({ action: 'queue' }); // exactly the cap: held
    const closed = { action: 'close', code: TRY_AGAIN_LATER, reason: 'over cap', resumeFrom: '7-2' };
    expect(p.decide(at(120, 130, 51))).toEqual(closed);
    expect(p.decide(at(0, 0, 1))).toEqual(closed);
  });

  it('closes a client paused longer than grace, not one paused exactly grace', () => {
    const p = createSendPolicy<number>({ highWater: 100, lowWater: 20, cap: 10_000, grace: 1000 });
    expect(p.decide(at(150, 0, 10, 5000))).toEqual({ action: 'queue' });
    expect(p.decide(at(90, 10, 0, 6000))).toEqual({ action: 'queue' });
    expect(p.decide(at(90, 10, 0, 6001))).toEqual({
      action: 'close',
      code: 1013,
      reason: 'paused past grace',
      resumeFrom: undefined,
    });
    // A client that gets down to lowWater in time starts a new grace when it falls behind again.
    const q = createSendPolicy<number>({ highWater: 100, lowWater: 20, cap: 10_000, grace: 1000 });
    q.decide(at(150, 0, 10, 0));
    expect(q.decide(at(20, 10, 0, 900))).toEqual({ action: 'send' });
    expect(q.decide(at(150, 0, 10, 1500))).toEqual({ action: 'queue' });
    expect(q.decide(at(150, 0, 0, 2500))).toEqual({ action: 'queue' });
  });

  it('for random sends, drains and pauses: the bytes held never pass the cap, and order is kept', () => {
    const cap = 4000;
    const op = fc.oneof(
      fc.record({ kind: fc.constant('send' as const), size: fc.integer({ min: 1, max: 1500 }) }),
      fc.record({ kind: fc.constant('drain' as const), size: fc.integer({ min: 0, max: 3000 }) }),
      fc.record({ kind: fc.constant('tick' as const), size: fc.integer({ min: 0, max: 3000 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const p = createSendPolicy<number>({ highWater: 1000, lowWater: 200, cap, grace: 5000 });
        // The caller: its queue of frames, the socket's buffer, the offsets written and acked.
        const queue: Array<{ offset: number; size: number }> = [];
        const socket: Array<{ offset: number; size: number }> = [];
        let written = 0;
        let acked: number | undefined;
        let now = 0;
        let next = 1;
        let closedWith: number | undefined | null = null;
        const sum = (xs: Array<{ size: number }>) => xs.reduce((s, x) => s + x.size, 0);
        const act = (frame?: { offset: number; size: number }) => {
          const d = p.decide({
            bufferedAmount: sum(socket),
            queuedBytes: sum(queue),
            frameBytes: frame?.size ?? 0,
            now,
          });
          if (d.action === 'close') {
            expect(d.code).toBe(1013);
            closedWith = d.resumeFrom;
            return;
          }
          if (frame) queue.push(frame);
          if (d.action === 'send') {
            for (const f of queue.splice(0)) {
              expect(f.offset).toBe(written + 1); // in order, none lost
              written = f.offset;
              socket.push(f);
            }
          }
        };
        for (const o of ops) {
          if (closedWith !== null) break;
          if (o.kind === 'send') act({ offset: next++, size: o.size });
          else if (o.kind === 'drain') {
            let left = o.size; // the client reads and acknowledges whole frames
            while (socket.length > 0 && (socket[0] as { size: number }).size <= left) {
              const f = socket.shift() as { offset: number; size: number };
              left -= f.size;
              acked = f.offset;
              p.acked(f.offset);
            }
            act();
          } else {
            now += o.size;
            act();
          }
          expect(sum(socket) + sum(queue)).toBeLessThanOrEqual(cap);
        }
        if (closedWith !== null) expect(closedWith).toBe(acked);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses bad options and arguments by name, changing no state', () => {
    for (const [options, option] of [
      [{ highwater: 10 }, 'highwater'],
      [{ highWater: 0 }, 'highWater'],
      [{ highWater: 100, lowWater: 100 }, 'lowWater'],
      [{ highWater: 100, lowWater: 10, cap: 99 }, 'cap'],
      [{ grace: 2 ** 31 }, 'grace'],
      [{ grace: 'a while' }, 'grace'],
    ] as const) {
      expect(() => createSendPolicy(options as never)).toThrow(expect.objectContaining({ option }));
    }
    const p = createSendPolicy({ highWater: 100, lowWater: 20, cap: 300 });
    for (const [state, path] of [
      [at(-1, 0, 0), 'bufferedAmount'],
      [at(0, 1.5, 0), 'queuedBytes'],
      [at(0, 0, 301), 'frameBytes'],
      [at(500, 0, 0, Number.NaN), 'now'],
    ] as const) {
      expect(() => p.decide(state)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARGUMENT', path }));
    }
    expect(p.paused).toBe(false);
    expect(p.decide(at(0, 0, 10))).toEqual({ action: 'send' });
  });

  it('defaults: 1 MiB high, 256 KiB low, 2 MiB cap', () => {
    const p = createSendPolicy();
    expect(p.decide(at(1024 * 1024 - 1, 0, 1))).toEqual({ action: 'send' });
    expect(p.decide(at(1024 * 1024, 0, 1))).toEqual({ action: 'queue' });
    expect(p.decide(at(256 * 1024 + 1, 0, 0))).toEqual({ action: 'queue' });
    expect(p.decide(at(256 * 1024, 0, 0))).toEqual({ action: 'send' });
    expect(p.decide(at(1024 * 1024, 1024 * 1024, 1))).toMatchObject({ action: 'close', reason: 'over cap' });
  });

  it('runs its example', () => {
    const policy = createSendPolicy<string>({ highWater: 100, lowWater: 20, cap: 300, grace: '1s' });
    policy.acked('1700000000000-3');
    expect(policy.decide(at(0, 0, 50, 0))).toEqual({ action: 'send' });
    expect(policy.decide(at(120, 0, 50, 10))).toEqual({ action: 'queue' });
    expect(policy.decide(at(200, 50, 60, 20))).toEqual({
      action: 'close',
      code: 1013,
      reason: 'over cap',
      resumeFrom: '1700000000000-3',
    });
  });
});
