import { describe, expect, it } from 'vitest';
import { InvalidOptionError } from '../core/errors.js';
import { type GatewayOptions, resolveGatewayOptions } from './gateway-options.js';

function refused(options: unknown, option: string): void {
  let error: unknown;
  try {
    resolveGatewayOptions(options as GatewayOptions);
  } catch (err) {
    error = err;
  }
  expect(error, `${option} should be refused`).toBeInstanceOf(InvalidOptionError);
  expect((error as InvalidOptionError).option).toBe(option);
}

describe('resolveGatewayOptions', () => {
  it('fills in the documented defaults', () => {
    expect(resolveGatewayOptions({ port: 0 })).toEqual({
      handlers: {},
      maxInFlight: 64,
      heartbeatMs: 15_000,
      sessionTtlMs: 600_000,
      leaseMs: 30_000,
      maxFrameBytes: 65_536,
      maxConnections: 10_000,
      maxConnectionsPerUser: 16,
      path: '/',
      host: '127.0.0.1',
    });
  });

  it('refuses an unknown key with a did-you-mean', () => {
    expect(() => resolveGatewayOptions({ port: 0, heartbeats: '1s' } as never)).toThrow(
      /did you mean `heartbeat`/,
    );
    refused({ port: 0, maxInflight: 3 }, 'maxInflight');
  });

  it.each<[string, unknown, string]>([
    ['not an object', null, 'options'],
    ['an array', [], 'options'],
    ['neither server nor port', {}, 'server'],
    ['both server and port', { server: {}, port: 0 }, 'server'],
    ['a port out of range', { port: 65_536 }, 'port'],
    ['a negative port', { port: -1 }, 'port'],
    ['a fractional port', { port: 1.5 }, 'port'],
    ['auth not a function', { port: 0, auth: 'x' }, 'auth'],
    ['observer not a function', { port: 0, observer: {} }, 'observer'],
    ['origins of non-strings', { port: 0, origins: [1] }, 'origins'],
    ['origins a string', { port: 0, origins: 'https://a.example' }, 'origins'],
    ['limits not an array', { port: 0, limits: {} }, 'limits'],
    ['limits a string', { port: 0, limits: 'user' }, 'limits'],
    [
      'a limit without by',
      { port: 0, limits: [{ algorithm: 'fixed-window', limit: 1, window: '1s' }] },
      'limits[0].by',
    ],
    ['a limit by an unknown subject', { port: 0, limits: [{ by: 'room' }] }, 'limits[0].by'],
    ['a null limit', { port: 0, limits: [null] }, 'limits[0].by'],
    ['trustProxy not a boolean', { port: 0, trustProxy: 'yes' }, 'trustProxy'],
    ['a path without a slash', { port: 0, path: 'ws' }, 'path'],
    ['an empty host', { port: 0, host: '' }, 'host'],
    ['maxInFlight 0', { port: 0, maxInFlight: 0 }, 'maxInFlight'],
    ['maxInFlight past the cap', { port: 0, maxInFlight: 1025 }, 'maxInFlight'],
    ['a heartbeat under 1 s', { port: 0, heartbeat: '999ms' }, 'heartbeat'],
    ['a heartbeat over 10 min', { port: 0, heartbeat: '11m', sessionTtl: '1h' }, 'heartbeat'],
    ['a sessionTtl under 1 s', { port: 0, sessionTtl: '500ms' }, 'sessionTtl'],
    ['a sessionTtl over 7 days', { port: 0, sessionTtl: '8d' }, 'sessionTtl'],
    ['a sessionTtl under twice the heartbeat', { port: 0, heartbeat: '2s', sessionTtl: '3s' }, 'sessionTtl'],
    ['a lease under 100 ms', { port: 0, lease: '50ms' }, 'lease'],
    ['a lease over 10 min', { port: 0, lease: '11m' }, 'lease'],
    ['maxFrameBytes under 1024', { port: 0, maxFrameBytes: 1023 }, 'maxFrameBytes'],
    ['maxFrameBytes over 64 KiB', { port: 0, maxFrameBytes: 65_537 }, 'maxFrameBytes'],
    ['maxConnections 0', { port: 0, maxConnections: 0 }, 'maxConnections'],
    ['maxConnectionsPerUser 0', { port: 0, maxConnectionsPerUser: 0 }, 'maxConnectionsPerUser'],
    ['handlers not an object', { port: 0, handlers: 3 }, 'handlers'],
    ['a handler not a function', { port: 0, handlers: { t: 'x' } }, 'handlers.t'],
    [
      'a handler spec with a bad validate',
      { port: 0, handlers: { t: { handle: () => {}, validate: 1 } } },
      'handlers.t',
    ],
    ['send with an unknown key', { port: 0, send: { highwater: 1 } }, 'highwater'],
    ['send with a cap under highWater', { port: 0, send: { highWater: 4096, cap: 1024 } }, 'cap'],
  ])('refuses %s', (_what, options, option) => {
    refused(options, option);
  });

  it('takes the edges of each bound', () => {
    const o = resolveGatewayOptions({
      port: 65_535,
      heartbeat: '1s',
      sessionTtl: '2s',
      lease: '100ms',
      maxInFlight: 1024,
      maxFrameBytes: 1024,
      handlers: { a: () => {}, b: { handle: () => {}, validate: () => true } },
      limits: [{ by: 'user-type', algorithm: 'fixed-window', limit: 1, window: '1s' }],
      origins: (origin) => origin === 'x',
      send: { highWater: 4096 },
      trustProxy: false,
    });
    expect(o).toMatchObject({
      heartbeatMs: 1000,
      sessionTtlMs: 2000,
      leaseMs: 100,
      maxInFlight: 1024,
      maxFrameBytes: 1024,
    });
    expect(resolveGatewayOptions({ server: {} as never }).path).toBe('/');
  });
});
