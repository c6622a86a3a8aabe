import { describe, expect, it } from 'vitest';
import { InvalidOptionError, StoreError } from '../core/errors.js';
import { NoReplyError, NotSentError } from '../redis/bounded-client.js';
import { NotReplicatedError } from '../redis/durability.js';
import { classifyStreamError } from './stream-errors.js';

const reply = (message: string) => Object.assign(new Error(message), { name: 'ReplyError' });

describe('classifyStreamError', () => {
  const table: [string, unknown, boolean, string][] = [
    ['LOADING', reply('LOADING Redis is loading the dataset in memory'), true, 'LOADING'],
    ['BUSY', reply('BUSY Redis is busy running a script.'), true, 'BUSY'],
    ['TRYAGAIN', reply('TRYAGAIN Multiple keys request during rehashing of slot'), true, 'TRYAGAIN'],
    ['CLUSTERDOWN', reply('CLUSTERDOWN The cluster is down'), true, 'CLUSTERDOWN'],
    ['MASTERDOWN', reply('MASTERDOWN Link with MASTER is down'), true, 'MASTERDOWN'],
    ['READONLY', reply("READONLY You can't write against a read only replica."), true, 'READONLY'],
    ['connection closed', new Error('Connection is closed.'), true, 'connection'],
    ['reset', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }), true, 'connection'],
    ['timeout', new Error('Command timed out'), true, 'connection'],
    [
      'no offline queue',
      new Error("Stream isn't writeable and enableOfflineQueue options is false"),
      true,
      'connection',
    ],
    [
      'WRONGTYPE',
      reply('WRONGTYPE Operation against a key holding the wrong kind of value'),
      false,
      'WRONGTYPE',
    ],
    ['NOPERM', reply("NOPERM this user has no permissions to run the 'evalsha' command"), false, 'NOPERM'],
    ['NOAUTH', reply('NOAUTH Authentication required.'), false, 'NOAUTH'],
    ['OOM', reply("OOM command not allowed when used memory > 'maxmemory'."), false, 'OOM'],
    [
      'script error',
      reply('ERR user_script:1: Script attempted to access nonexistent global variable'),
      false,
      'ERR',
    ],
    ['MOVED reaching the caller', reply('MOVED 3999 127.0.0.1:6381'), false, 'MOVED'],
    ['ASK reaching the caller', reply('ASK 3999 127.0.0.1:6381'), false, 'ASK'],
  ];
  for (const [name, err, retryable, kind] of table) {
    it(`${name}: ${retryable ? 'retryable' : 'terminal'}`, () => {
      expect(classifyStreamError(err)).toMatchObject({ retryable, kind });
    });
  }

  // Whether the failed call may have taken effect.
  const outcomes: [string, unknown, string, boolean, string][] = [
    [
      'never sent (not connected)',
      new NotSentError('not connected', true),
      'connection',
      true,
      'not-applied',
    ],
    [
      'never sent (closed meanwhile)',
      new NotSentError('closed', false),
      'closed-client',
      false,
      'not-applied',
    ],
    ['sent, no reply', new NoReplyError('no reply'), 'connection', true, 'unknown'],
    ['a connection lost', new Error('Connection is closed.'), 'connection', true, 'unknown'],
    [
      'refused unqueued',
      new Error("Stream isn't writeable and enableOfflineQueue options is false"),
      'connection',
      true,
      'not-applied',
    ],
    ['a passing reply', reply('LOADING loading'), 'LOADING', true, 'not-applied'],
    ['a script error', reply('ERR user_script:1: oops'), 'ERR', false, 'unknown'],
    [
      'too few replicas',
      new NotReplicatedError({
        operation: 'publish',
        calls: 1,
        wanted: 1,
        replicas: 0,
        aof: false,
        local: undefined,
        timeoutMs: 10,
      }),
      'not-replicated',
      true,
      'unknown',
    ],
  ];
  for (const [name, err, kind, retryable, outcome] of outcomes) {
    it(`${name}: ${kind}, ${outcome}`, () => {
      expect(classifyStreamError(err)).toEqual({ retryable, kind, outcome });
    });
  }

  it('a closed client is terminal whatever the error', () => {
    expect(classifyStreamError(new Error('Connection is closed.'), true)).toEqual({
      retryable: false,
      kind: 'closed-client',
      outcome: 'not-applied',
    });
  });

  it("a StoreError keeps its store's retriable and names its cause's kind", () => {
    const inner = reply('LOADING loading');
    expect(classifyStreamError(new StoreError('x', inner, { retriable: false }))).toEqual({
      retryable: false,
      kind: 'LOADING',
      outcome: 'unknown',
    });
    expect(classifyStreamError(new StoreError('x', new Error('reset'), { retriable: true }))).toEqual({
      retryable: true,
      kind: 'connection',
      outcome: 'unknown',
    });
    const short = new NotReplicatedError({
      operation: 'ledgerApply',
      calls: 1,
      wanted: 1,
      replicas: 0,
      aof: false,
      local: undefined,
      timeoutMs: 10,
    });
    expect(classifyStreamError(new StoreError('x', short, { retriable: true }))).toMatchObject({
      kind: 'not-replicated',
    });
  });
});

describe('classifyStreamError: a setting the server refuses', () => {
  it('is terminal and not-applied: no try can succeed until the server changes', () => {
    const refused = new InvalidOptionError('durability.aof', 'a master with appendonly yes', true);
    expect(classifyStreamError(refused)).toEqual({
      retryable: false,
      kind: 'invalid-option',
      outcome: 'not-applied',
    });
  });
});
