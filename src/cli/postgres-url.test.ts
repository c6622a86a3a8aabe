import { describe, expect, it } from 'vitest';
import { checkPostgresUrl, PostgresUrlError } from './postgres-url.js';

describe('checkPostgresUrl', () => {
  it('accepts what pg reads as a server: URLs, unix sockets, socket: URLs, the /dir form', () => {
    const cases: [string, { host: string; port: number }][] = [
      ['postgres://app@db.internal:6543/app', { host: 'db.internal', port: 6543 }],
      ['postgresql://app@127.0.0.1/app?sslmode=disable', { host: '127.0.0.1', port: 5432 }],
      ['postgres://u@[::1]:5433/db', { host: '::1', port: 5433 }],
      ['postgresql:///test', { host: 'localhost', port: 5432 }],
      ['postgresql://postgres@/test?host=/var/run/postgresql', { host: '/var/run/postgresql', port: 5432 }],
      ['postgresql:///test?host=/var/run/postgresql&port=5433', { host: '/var/run/postgresql', port: 5433 }],
      ['postgres://%2Fvar%2Frun%2Fpostgresql/test', { host: '/var/run/postgresql', port: 5432 }],
      ['socket:/var/run/postgresql?db=test&user=postgres', { host: '/var/run/postgresql', port: 5432 }],
      ['/var/run/postgresql test', { host: '/var/run/postgresql', port: 5432 }],
    ];
    for (const [value, address] of cases)
      expect(checkPostgresUrl('--postgres', value), value).toEqual(address);
  });

  it('refuses what pg would misread or cannot parse, naming it with its password redacted', () => {
    for (const bad of [
      'not a url',
      '127.0.0.1:5432',
      'redis://127.0.0.1:6379',
      'postgres://[::1',
      'postgres://h/db?port=x',
      'host=/var/run/postgresql dbname=test',
    ]) {
      expect(() => checkPostgresUrl('--postgres', bad), bad).toThrow(PostgresUrlError);
    }
    // pg reads no keyword/value strings: it would connect to a host named `base`; said so.
    const kv = (() => {
      try {
        checkPostgresUrl('--postgres', "host=db dbname=app password='s3 cret' user=app");
      } catch (err) {
        return (err as Error).message;
      }
      return '';
    })();
    expect(kv).toMatch(/keyword=value/);
    expect(kv).toContain('password=***');
    expect(kv).not.toContain('s3');
  });
});
