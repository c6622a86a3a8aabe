import { describe, expect, it } from 'vitest';
import { joinRef, joinRoom, LogWriter, settlementSignature } from './delivery-log.js';

describe('delivery log pieces', () => {
  it('uses the seeds settlement signature, exactly', () => {
    expect(settlementSignature.schema).toEqual([
      ['room', 'string'],
      ['round', 'int'],
      ['net', 'int'],
      ['final', 'bool'],
    ]);
    expect(settlementSignature({ room: 'room-3', round: 42, net: -300, final: true })).toBe(
      'v1|room=room-3|round=42|net=-300|final=true',
    );
  });

  it('encodes joins as negative refs, room 0 included', () => {
    for (const room of [0, 1, 249]) {
      expect(joinRef(room)).toBeLessThan(0);
      expect(joinRoom(joinRef(room))).toBe(room);
    }
  });

  it('grows past its estimate and trims to what was written', () => {
    const w = new LogWriter(1);
    for (let i = 0; i < 1000; i++) w.push(i % 7 === 0 ? joinRef(i) : i, i % 13);
    const { ref, player } = w.finish();
    expect(ref.length).toBe(1000);
    expect(player.length).toBe(1000);
    expect(ref[999]).toBe(999);
    expect(joinRoom(ref[994] as number)).toBe(994);
    expect(player[999]).toBe(999 % 13);
  });
});
