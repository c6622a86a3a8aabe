import { describe, expect, it } from 'vitest';
import type { RedisLike } from '../redis/eval.js';
import { commandTokens, forgetStreamFeatures, parseVersion, streamFeatures } from './redis-features.js';

// XTRIM's docs as Redis 8.2 writes them (RESP2), cut to the argument tree around the tokens.
const XTRIM_82 = [
  'summary',
  'Deletes messages from the beginning of a stream.',
  'since',
  '5.0.0',
  'arguments',
  [
    ['name', 'key', 'type', 'key', 'key_spec_index', 0],
    [
      'name',
      'trim',
      'type',
      'block',
      'arguments',
      [
        [
          'name',
          'strategy',
          'type',
          'oneof',
          'arguments',
          [['name', 'minid', 'type', 'pure-token', 'token', 'MINID']],
        ],
        ['name', 'count', 'type', 'integer', 'token', 'LIMIT', 'since', '6.2.0', 'flags', ['optional']],
        [
          'name',
          'condition',
          'type',
          'oneof',
          'since',
          '8.2.0',
          'arguments',
          [
            ['name', 'keepref', 'type', 'pure-token', 'token', 'KEEPREF'],
            ['name', 'acked', 'type', 'pure-token', 'token', 'ACKED'],
          ],
        ],
      ],
    ],
  ],
];
const XADD_86 = ['arguments', [['name', 'idmp', 'type', 'block', 'token', 'IDMP', 'arguments', []]]];

function fake(replies: Record<string, () => unknown>): RedisLike & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    call(command: string) {
      calls.push(command);
      const r = replies[command];
      if (!r) return Promise.reject(new Error(`ERR unknown command '${command}'`));
      try {
        return Promise.resolve(r());
      } catch (err) {
        return Promise.reject(err);
      }
    },
  };
}

describe('stream feature detection', () => {
  it('reads ACKED and IDMP from the command docs, whatever the version says', async () => {
    const client = fake({
      INFO: () => '# Server\r\nredis_version:7.2.4\r\n',
      COMMAND: () => ['xtrim', XTRIM_82, 'xadd', XADD_86, 'xackdel', ['summary', 'x']],
    });
    expect(await streamFeatures(client)).toEqual({
      version: '7.2.4',
      trimAcked: true,
      addAcked: false,
      ackDel: true,
      addIdempotent: true,
      source: 'command-docs',
    });
  });

  it('does not take a summary that mentions a token for the token', () => {
    const tokens = commandTokens([
      'xtrim',
      ['summary', 'token', 'arguments', [['name', 'x', 'token', 'MINID']]],
    ]);
    expect([...(tokens?.get('xtrim') ?? [])]).toEqual(['MINID']);
    expect(commandTokens('not an array')).toBeUndefined();
    expect(commandTokens(['odd'])).toBeUndefined();
  });

  it('falls back to the version when COMMAND DOCS is refused', async () => {
    const v82 = fake({ INFO: () => 'redis_version:8.2.1\r\n' });
    expect(await streamFeatures(v82)).toMatchObject({
      trimAcked: true,
      addIdempotent: false,
      source: 'version',
    });
    const v70 = fake({ INFO: () => 'redis_version:7.0.15\r\n' });
    expect(await streamFeatures(v70)).toMatchObject({ trimAcked: false, ackDel: false, source: 'version' });
    const none = fake({});
    expect(await streamFeatures(none)).toMatchObject({
      version: undefined,
      trimAcked: false,
      source: 'version',
    });
  });

  it('caches per client and forgets on request', async () => {
    const client = fake({ INFO: () => 'redis_version:7.0.15\r\n', COMMAND: () => ['xtrim', XTRIM_82] });
    const a = await streamFeatures(client);
    expect(await streamFeatures(client)).toBe(a);
    expect(client.calls).toEqual(['INFO', 'COMMAND']);
    forgetStreamFeatures(client);
    await streamFeatures(client);
    expect(client.calls).toHaveLength(4);
  });

  it('parses versions', () => {
    expect(parseVersion('8.2.1')).toEqual([8, 2, 1]);
    expect(parseVersion('255.255.255')).toEqual([255, 255, 255]);
    expect(parseVersion('7.0')).toEqual([7, 0, 0]);
    expect(parseVersion('unstable')).toBeUndefined();
    expect(parseVersion(undefined)).toBeUndefined();
  });
});
