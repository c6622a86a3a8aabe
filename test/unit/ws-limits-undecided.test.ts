// The store that decides a message's limits fails before its handler starts: the message gets
// no outcome (INTERNAL, close 1011), its seq is given back, and the client's re-send is decided
// afresh, limits taken: not charged twice, not passed uncharged.
import { describe, expect, it } from 'vitest';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import { wrapStore } from '../../src/testing/wrap-store.js';
import { createGateway } from '../../src/ws/index.js';
import { newSession, open } from '../support/ws-raw-client.js';

describe('limits undecided', () => {
  it('a failed limit decision: INTERNAL, nothing recorded, and the re-send is charged once', async () => {
    const base = memoryStore();
    let failNext = true;
    const store = wrapStore(base, {
      limiterTake: (cmd) => {
        if (!failNext) return (base.limiterTake as NonNullable<typeof base.limiterTake>)(cmd);
        failNext = false;
        return Promise.reject(new Error('limits store unreachable'));
      },
    });
    const ran: string[] = [];
    const gateway = await createGateway({
      port: 0,
      store,
      handlers: { t: (m) => void ran.push(m.id) },
      limits: [{ by: 'user', algorithm: 'sliding-log', limit: 1, window: '1m' }],
    });
    try {
      const session = newSession('undecided');
      const first = await open(gateway.port as number, session);
      first.client.msg(1, 'a', 't');
      const closed = await first.client.closed;
      expect(closed.code).toBe(1011);
      expect(first.client.frames.find((f) => f.op === 'error')).toMatchObject({ code: 'INTERNAL' });
      expect(ran).toEqual([]);

      const again = await open(gateway.port as number, session);
      expect(again.welcome).toMatchObject({ continued: true, seq: 0 });
      again.client.msg(1, 'a', 't');
      again.client.msg(2, 'b', 't');
      const acks = await again.client.waitFor((f) => f.op === 'ack' && f.seq === 2);
      expect(again.client.frames.filter((f) => f.op === 'ack').map((f) => [f.seq, f.outcome])).toEqual([
        [1, 'handled'],
        [2, 'limited'],
      ]);
      expect(acks).toBeDefined();
      expect(ran).toEqual(['a']);
      again.client.ws.close();
    } finally {
      await gateway.close({ drain: '200ms' });
    }
  });
});
