import { describe, expect, it } from 'vitest';
import { keySlot } from '../redis/slot.js';
import { createStreamProducer } from './producer.js';
import { DEFAULT_BACKLOG_EVENTS, dedupKeys, producerConfig } from './producer-options.js';

const client = { call: async () => null };

describe('stream producer options', () => {
  it('derives dedup keys in the stream’s hash slot, distinct for tagged and untagged streams', () => {
    for (const s of ['orders', '{orders}', 'app:{t1}:events', 'a{b']) {
      const [ids, order] = dedupKeys(s);
      expect(keySlot(ids)).toBe(keySlot(s));
      expect(keySlot(order)).toBe(keySlot(s));
    }
    expect(dedupKeys('orders')).not.toEqual(dedupKeys('{orders}'));
  });

  it("keeps them in the slot of the keys as stored, with the client's keyPrefix", () => {
    for (const s of ['orders', '{orders}', 'app:{t1}:events']) {
      for (const key of dedupKeys(s, 'tenant-1:'))
        expect(keySlot(`tenant-1:${key}`)).toBe(keySlot(`tenant-1:${s}`));
    }
    const prefixed = { call: async () => null, options: { keyPrefix: 'tenant-1:' } };
    expect(producerConfig({ client: prefixed, stream: 'orders' }).idsKey).toBe(
      '{tenant-1:orders}:stream-dedup:ids',
    );
    // A keyPrefix that would move every key's hash tag is refused.
    expect(() =>
      producerConfig({
        client: { call: prefixed.call, options: { keyPrefix: 't{1}:' } } as never,
        stream: 'o',
      }),
    ).toThrow(expect.objectContaining({ code: 'ERR_INVALID_OPTION', option: 'client.options.keyPrefix' }));
  });

  it('refuses a stream whose dedup record cannot share its slot', () => {
    expect(() => createStreamProducer({ client, stream: 'a{}b' })).toThrow(
      expect.objectContaining({ option: 'stream' }),
    );
  });

  it('names each bad option', () => {
    const bad: [Record<string, unknown>, string][] = [
      [{ client: {} }, 'client'],
      [{ stream: '' }, 'stream'],
      [{ stream: 'x'.repeat(300) }, 'stream'],
      [{ dedup: { window: 0 } }, 'dedup.window'],
      [{ dedup: { maxIds: 0 } }, 'dedup.maxIds'],
      [{ retry: { attempts: 0 } }, 'retry.attempts'],
      [{ backlog: { maxEvents: -1 } }, 'backlog.maxEvents'],
      [{ backlog: { maxBytes: 1.5 } }, 'backlog.maxBytes'],
      [{ maxEventBytes: 0 }, 'maxEventBytes'],
      [{ deadLetter: { stream: '' } }, 'deadLetter.stream'],
      [{ id: 'x' }, 'id'],
      [{ observer: 1 }, 'observer'],
      [{ name: '' }, 'name'],
    ];
    for (const [patch, option] of bad) {
      expect(() => createStreamProducer({ client, stream: 's', ...patch } as never)).toThrow(
        expect.objectContaining({ option }),
      );
    }
  });

  it('defaults: dead letters to <stream>:dead, origin producer:<stream>, bounded backlog', () => {
    const c = producerConfig({ client, stream: 's' });
    expect(c.deadStream).toBe('s:dead');
    expect(c.origin).toBe('producer:s');
    expect(c.maxEvents).toBe(DEFAULT_BACKLOG_EVENTS);
    expect(producerConfig({ client, stream: 's', deadLetter: false }).deadStream).toBeUndefined();
  });
});
