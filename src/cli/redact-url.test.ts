import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { redactUrl } from './redact-url.js';

describe('redactUrl', () => {
  it.each([
    ['redis://user:s3cret@127.0.0.1:6379', 'redis://user:***@127.0.0.1:6379'],
    ['rediss://:s3cret@host:6380/2', 'rediss://:***@host:6380/2'],
    ['redis://user:p@ss@word@host', 'redis://user:***@host'],
    ['redis://user:p%40ss@host/0', 'redis://user:***@host/0'],
    ['redis://127.0.0.1:6379/0?password=s3cret', 'redis://127.0.0.1:6379/0?password=***'],
    ['redis://h?db=1&sentinelPassword=s3cret&x=1', 'redis://h?db=1&sentinelPassword=***&x=1'],
    ['user:s3cret@127.0.0.1:6379', 'user:***@127.0.0.1:6379'],
    ['http://u:s3cret@h', 'http://u:***@h'],
    [
      'cannot connect to Redis at redis://a:s3cret@h:1: connect ECONNREFUSED 127.0.0.1:1',
      'cannot connect to Redis at redis://a:***@h:1: connect ECONNREFUSED 127.0.0.1:1',
    ],
    ['`"redis://a:s3cret@h:99999"` (string)', '`"redis://a:***@h:99999"` (string)'],
    // The `: ` after a URL in a message is the message's, not the password's.
    [
      'migrate failed on postgres://h/db?password=s3cret: connect ECONNREFUSED',
      'migrate failed on postgres://h/db?password=***: connect ECONNREFUSED',
    ],
    ['postgres://h/db?password=s3:cret:', 'postgres://h/db?password=***:'],
    ['postgres://h/db?password=s3:cret x', 'postgres://h/db?password=*** x'],
  ])('%s → %s', (given, expected) => {
    expect(redactUrl(given)).toBe(expected);
  });

  it('keeps a user name alone and text without credentials as it is', () => {
    for (const text of [
      'redis://127.0.0.1:6379',
      'redis://app@127.0.0.1:6379',
      'redis:///0',
      'connect ECONNREFUSED 127.0.0.1:6379',
      'mail me at a@b.c',
      '',
    ]) {
      expect(redactUrl(text)).toBe(text);
    }
  });

  it('no password a URL parser reads survives, in a URL or a message around it', () => {
    const secret = fc.stringMatching(/^[A-Za-z0-9!$&'()*+,;=%@:._~-]{1,24}$/);
    fc.assert(
      fc.property(secret, fc.stringMatching(/^[a-z0-9_-]{0,8}$/), (password, user) => {
        const url = `redis://${user}:${password}@127.0.0.1:6379/0`;
        let parsed: URL;
        try {
          parsed = new URL(url);
        } catch {
          return; // not a URL anyone could connect with
        }
        // A password that is the mask itself cannot be told apart from its redaction.
        if (parsed.password === '' || parsed.password === '***' || parsed.hostname !== '127.0.0.1') return;
        for (const text of [url, `cannot connect to Redis at ${url}: read ECONNRESET`]) {
          const out = redactUrl(text);
          expect(out).not.toContain(`:${parsed.password}@`);
          expect(out).not.toContain(`:${password}@`);
          expect(new URL(redactUrl(url)).password).toBe('***');
        }
      }),
      { numRuns: 2000 },
    );
  });
});
