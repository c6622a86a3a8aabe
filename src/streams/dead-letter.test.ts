import { describe, expect, it } from 'vitest';
import { DEAD_LETTER_ERROR_BYTES, deadLetterFields, parseDeadLetter, truncateUtf8 } from './dead-letter.js';

describe('dead-letter format', () => {
  const letter = {
    reason: 'publish-failed' as const,
    attempts: 8,
    firstError: 'Connection is closed.',
    lastError: 'LOADING',
    origin: 'producer:orders',
    event: '{"n":1}',
  };

  it('builds the shared fields, with id only when the event has one', () => {
    expect(parseDeadLetter(deadLetterFields(letter))).toEqual({
      reason: 'publish-failed',
      attempts: '8',
      first_error: 'Connection is closed.',
      last_error: 'LOADING',
      origin: 'producer:orders',
      event: '{"n":1}',
    });
    expect(parseDeadLetter(deadLetterFields({ ...letter, id: 'o1' })).id).toBe('o1');
  });

  it('cuts error messages to 1024 bytes of UTF-8, never inside a character', () => {
    const long = 'é'.repeat(1000); // 2000 bytes
    const fields = parseDeadLetter(deadLetterFields({ ...letter, firstError: long, lastError: `x${long}` }));
    for (const text of [fields.first_error as string, fields.last_error as string]) {
      expect(Buffer.byteLength(text, 'utf8')).toBeLessThanOrEqual(DEAD_LETTER_ERROR_BYTES);
      expect(Buffer.byteLength(text, 'utf8')).toBeGreaterThan(DEAD_LETTER_ERROR_BYTES - 2);
      expect(text).not.toContain('\uFFFD');
    }
    expect(truncateUtf8('😀😀', 5)).toBe('😀');
    expect(truncateUtf8('short')).toBe('short');
  });

  it('refuses a bad attempts count', () => {
    expect(() => deadLetterFields({ ...letter, attempts: -1 })).toThrow(
      expect.objectContaining({ path: 'attempts' }),
    );
  });
});
