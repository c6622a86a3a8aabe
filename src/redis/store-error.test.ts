import { describe, expect, it } from 'vitest';
import { NoReplyError, NotSentError } from './bounded-client.js';
import { redisFailure } from './store-error.js';

/** An error as ioredis gives a server's error reply. */
function reply(message: string): Error {
  return Object.assign(new Error(message), { name: 'ReplyError' });
}

describe('redisFailure', () => {
  it('a reply the server gives without running the command (loading, busy, failing over) is not-applied and retriable', () => {
    for (const m of [
      'LOADING Redis is loading',
      'BUSY Redis is busy running a script',
      "READONLY You can't write",
      'CLUSTERDOWN The cluster is down',
      'TRYAGAIN Multiple keys',
      'MASTERDOWN Link down',
    ]) {
      expect(redisFailure(reply(m), false, 'script')).toEqual({ outcome: 'not-applied', retriable: true });
    }
  });

  it('any other error reply is not retriable: unknown for a script (its writes stand), not-applied for one command', () => {
    const wrongType = reply('WRONGTYPE Operation against a key holding the wrong kind of value');
    expect(redisFailure(wrongType, false, 'script')).toEqual({ outcome: 'unknown', retriable: false });
    expect(redisFailure(wrongType, false, 'write')).toEqual({ outcome: 'not-applied', retriable: false });
    expect(redisFailure(reply('ERR user_script:1: oops'), false, 'script')).toMatchObject({
      retriable: false,
    });
  });

  it('a connection failure is unknown and retriable, except for a read, and for a client closed before the call', () => {
    for (const m of ['Connection is closed.', 'Command timed out', 'read ECONNRESET']) {
      expect(redisFailure(new Error(m), false, 'script')).toEqual({ outcome: 'unknown', retriable: true });
      expect(redisFailure(new Error(m), false, 'read')).toEqual({ outcome: 'not-applied', retriable: true });
    }
    expect(redisFailure(new Error('Connection is closed.'), true, 'script')).toEqual({
      outcome: 'not-applied',
      retriable: false,
    });
    const offline = new Error("Stream isn't writeable and enableOfflineQueue options is false");
    expect(redisFailure(offline, false, 'script')).toEqual({ outcome: 'not-applied', retriable: true });
  });

  it('a command the store held and never sent is not-applied; one sent and unanswered in time is unknown', () => {
    expect(redisFailure(new NotSentError('not connected within 10000 ms', true), false, 'script')).toEqual({
      outcome: 'not-applied',
      retriable: true,
    });
    expect(redisFailure(new NotSentError('closed', false), false, 'script')).toEqual({
      outcome: 'not-applied',
      retriable: false,
    });
    expect(redisFailure(new NoReplyError('no reply within 10000 ms'), false, 'script')).toEqual({
      outcome: 'unknown',
      retriable: true,
    });
  });
});
