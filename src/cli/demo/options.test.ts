import { describe, expect, it } from 'vitest';
import { DEFAULT_DEMO, demoCommandFrom, refuseUnknown } from './options.js';

describe('demo options', () => {
  it('defaults to the default scenario with the progress bar on', () => {
    expect(demoCommandFrom({})).toEqual({ config: DEFAULT_DEMO, json: false, progress: true });
  });

  it('reads every option', () => {
    const cmd = demoCommandFrom({
      settlements: '1_000_000',
      players: '64',
      seed: '7',
      'dup-rate': '0.1',
      'late-rate': '.2',
      'replay-rate': '0',
      'late-replay-rate': '0.5',
      'reorder-rate': '1',
      'move-rate': '0.5',
      overlap: '2',
      ttl: '30',
      store: 'redis://127.0.0.1:6379',
      'no-progress': true,
    });
    expect(cmd.config).toEqual({
      settlements: 1_000_000,
      players: 64,
      seed: 7,
      dupRate: 0.1,
      lateRate: 0.2,
      replayRate: 0,
      lateReplayRate: 0.5,
      reorderRate: 1,
      moveRate: 0.5,
      overlap: 2,
      ttl: 30,
      store: 'redis://127.0.0.1:6379',
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
    ['settlements', '1000001'],
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
    ['ttl', '0'],
    ['ttl', '86401'],
    ['late-replay-rate', '2'],
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
    for (const url of [
      'redis://127.0.0.1:6379',
      'redis:///0',
      'redis://[::1]:6379/2',
      'rediss://user:pa%20ss@host:6380',
      'redis://host?family=6',
    ]) {
      expect(demoCommandFrom({ store: url }).config.store).toBe(url);
    }
    for (const url of [
      'redis://h:notaport',
      'redis://h:0',
      'redis://h:6379/abc',
      'redis://%zz@h',
      'http://h:6379',
    ]) {
      expect(() => demoCommandFrom({ store: url })).toThrow(/`--store`/);
    }
  });

  it('takes PostgreSQL URLs and memory; a password in a refused URL is not echoed', () => {
    for (const url of [
      'postgres://postgres@127.0.0.1:5432/test',
      'postgresql://u:p%20w@h/db?sslmode=disable',
      'postgres://h',
    ]) {
      expect(demoCommandFrom({ store: url }).config.store).toBe(url);
    }
    expect(demoCommandFrom({ store: 'memory' }).config.store).toBeUndefined();
    for (const url of [
      'mysql://h/db',
      'postgres://h:0/db',
      'postgres://h:99999/db',
      'postgres://%zz@h/db',
      'not a url',
    ]) {
      expect(() => demoCommandFrom({ store: url })).toThrow(/`--store`/);
    }
    expect(() => demoCommandFrom({ store: 'postgres://u:s3cret@h:0/db' })).toThrow(/^(?!.*s3cret)/);
  });

  it('refuses an unknown option with the closest known one, or where an old one went', () => {
    expect(() => refuseUnknown(['--seeed', '3'])).toThrow(/`--seeed`.*did you mean --seed\?/);
    expect(() => refuseUnknown(['--dup-rat=0.1'])).toThrow(/did you mean --dup-rate\?/);
    expect(() => refuseUnknown(['--redis', 'redis://h'])).toThrow(/use --store redis:\/\/host:port/);
    expect(() => refuseUnknown(['--workers', '4'])).toThrow(/examples\/settlement-workers\.mjs/);
    expect(() => refuseUnknown(['--zzzzzzzz'])).toThrow(/onceflow demo --help/);
    expect(() => refuseUnknown(['--seed', '3', '--json', '-h'])).not.toThrow();
  });
});
