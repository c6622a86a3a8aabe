import { describe, expect, it } from 'vitest';
import { createOwnerMemo, REGISTERED_CACHE } from './owner-memo.js';

describe('createOwnerMemo', () => {
  it('keeps one memo per (ledger, owner), apart whatever the names contain', () => {
    const memos = createOwnerMemo('p:');
    const memo = memos.get('a', 'b');
    memo.inLedger = true;
    expect(memos.get('a', 'b')).toBe(memo);
    expect(memos.get('ab', '')).not.toBe(memo);
    expect(memos.get('a:', 'b')).not.toBe(memo);
    expect(memos.get('', 'ab')).not.toBe(memos.get('ab', ''));
  });

  it('is bounded: past REGISTERED_CACHE owners the least recently used is forgotten, a used one kept', () => {
    const memos = createOwnerMemo('p:');
    const first = memos.get('l', 'first');
    const hot = memos.get('l', 'hot');
    for (let i = 0; i < REGISTERED_CACHE; i++) {
      memos.get('l', `o${i}`);
      if (i % 1000 === 0) expect(memos.get('l', 'hot')).toBe(hot);
    }
    expect(memos.get('l', 'hot')).toBe(hot);
    expect(memos.get('l', 'first')).not.toBe(first);
  });
});
