import { describe, expect, it } from 'vitest';
import { demoCommandFrom } from './options.js';
import { DEFAULT_SCENARIO } from './scenario.js';

describe('demo options', () => {
  it('defaults to the default scenario with the progress bar on', () => {
    expect(demoCommandFrom({})).toEqual({ config: DEFAULT_SCENARIO, json: false, progress: true });
  });

  it('reads every option', () => {
    const cmd = demoCommandFrom({
      settlements: '1_000_000',
      players: '64',
      seed: '7',
      'dup-rate': '0.1',
      'late-rate': '.2',
      'replay-rate': '0',
      'reorder-rate': '1',
      'move-rate': '0.5',
      overlap: '2',
      'no-progress': true,
    });
    expect(cmd.config).toEqual({
      settlements: 1_000_000,
      players: 64,
      seed: 7,
      dupRate: 0.1,
      lateRate: 0.2,
      replayRate: 0,
      reorderRate: 1,
      moveRate: 0.5,
      overlap: 2,
    });
    expect(cmd.progress).toBe(false);
    expect(demoCommandFrom({ settlements: '1e6' }).config.settlements).toBe(1_000_000);
  });

  it('reads rates in exponent form, as the whole-number options take 1e6', () => {
    expect(
      demoCommandFrom({ 'dup-rate': '1e-3', 'late-rate': '5E-2', 'move-rate': '1e0' }).config,
    ).toMatchObject({
      dupRate: 0.001,
      lateRate: 0.05,
      moveRate: 1,
    });
  });

  it('rounds an odd settlement count up to whole rounds, so the config reported is the run', () => {
    expect(demoCommandFrom({ settlements: '3' }).config.settlements).toBe(4);
    expect(demoCommandFrom({ settlements: '4' }).config.settlements).toBe(4);
  });

  it('turns the progress bar off for --json', () => {
    expect(demoCommandFrom({ json: true })).toMatchObject({ json: true, progress: false });
  });

  it.each([
    ['settlements', 'abc'],
    ['settlements', '0'],
    ['settlements', '-5'],
    ['settlements', '1.5'],
    ['settlements', '999999999'],
    ['players', '0'],
    ['seed', '4294967296'],
    ['dup-rate', '1.5'],
    ['late-rate', 'often'],
    ['replay-rate', '-0.1'],
    ['replay-rate', '1e1'],
    ['dup-rate', 'e-3'],
    ['reorder-rate', ''],
    ['move-rate', 'NaN'],
    ['overlap', '3'],
  ] as const)('rejects --%s %j naming the option and the value', (option, value) => {
    expect(() => demoCommandFrom({ [option]: value })).toThrow(
      expect.objectContaining({
        code: 'ERR_INVALID_OPTION',
        message: expect.stringContaining(`\`--${option}\``),
      }),
    );
    expect(() => demoCommandFrom({ [option]: value })).toThrow(JSON.stringify(value));
  });

  it('takes the Redis URLs ioredis reads as meant, and refuses the ones it would throw on or misread', () => {
    const ok = [
      'redis://127.0.0.1:6379',
      'redis:///0',
      'redis://[::1]:6379/2',
      'rediss://user:pa%20ss@host:6380',
      'redis://host?family=6',
    ];
    for (const url of ok)
      expect(demoCommandFrom({ redis: url }).shared).toEqual({ backend: 'redis', url, workers: 4 });
    for (const url of [
      'redis://h:notaport',
      'redis://h:0',
      'redis://h:6379/abc',
      'redis://%zz@h',
      'http://h:6379',
    ]) {
      expect(() => demoCommandFrom({ redis: url })).toThrow(/`--redis`/);
    }
  });

  it('takes PostgreSQL URLs, with --workers; one shared store per run; --workers alone is refused', () => {
    for (const url of [
      'postgres://postgres@127.0.0.1:5432/test',
      'postgresql://u:p%20w@h/db?sslmode=disable',
      'postgres://h',
    ]) {
      expect(demoCommandFrom({ postgres: url, workers: '2' }).shared).toEqual({
        backend: 'postgres',
        url,
        workers: 2,
      });
    }
    for (const url of [
      'mysql://h/db',
      'postgres://h:0/db',
      'postgres://h:99999/db',
      'postgres://%zz@h/db',
      'not a url',
    ]) {
      expect(() => demoCommandFrom({ postgres: url })).toThrow(/`--postgres`/);
    }
    expect(() => demoCommandFrom({ postgres: 'postgres://h/db', redis: 'redis://h' })).toThrow(
      /`--postgres` to be given without `--redis`/,
    );
    expect(() => demoCommandFrom({ workers: '2' })).toThrow(
      /`--workers` to be used together with `--redis` or `--postgres`/,
    );
    // A password in a refused URL is not echoed.
    expect(() => demoCommandFrom({ postgres: 'postgres://u:s3cret@h:0/db' })).toThrow(/^(?!.*s3cret)/);
  });
});
