import { describe, expect, it } from 'vitest';
import { compareStreamIds, formatStreamId, nextStreamId, parseStreamId, streamIdAt } from './stream-id.js';

describe('stream ids', () => {
  it('compare by (ms, seq) as numbers, not as text', () => {
    const ids = ['10-0', '9-5', '9-10', '18446744073709551615-0', '0-1'].map((t) => parseStreamId(t));
    ids.sort(compareStreamIds);
    expect(ids.map(formatStreamId)).toEqual(['0-1', '9-5', '9-10', '10-0', '18446744073709551615-0']);
  });

  it('step to the next id, carrying into ms at the end of seq', () => {
    const max = '18446744073709551615';
    expect(formatStreamId(nextStreamId(parseStreamId('5-1')) ?? streamIdAt(0))).toBe('5-2');
    expect(formatStreamId(nextStreamId(parseStreamId(`5-${max}`)) ?? streamIdAt(0))).toBe('6-0');
    expect(nextStreamId(parseStreamId(`${max}-${max}`))).toBeUndefined();
  });

  it('refuse what is not an id, by name', () => {
    for (const bad of ['', '5', '5-', '-1-0', '1-0-0', '18446744073709551616-0', ' 1-0', '1.5-0']) {
      expect(() => parseStreamId(bad, 'lastId')).toThrow(expect.objectContaining({ path: 'lastId' }));
    }
  });
});
