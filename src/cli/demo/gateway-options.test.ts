import { describe, expect, it } from 'vitest';
import { DEFAULT_GATEWAY_DEMO, DEMO_HELP, demoCommandFrom, gatewayCommandFrom } from './options.js';

describe('onceflow demo --gateway options', () => {
  it('defaults: 50 clients, 100 messages, the memory store', () => {
    expect(gatewayCommandFrom({ gateway: true })).toEqual({
      config: { clients: 50, messages: 100, seed: 1 },
      json: false,
      progress: true,
    });
    expect(DEFAULT_GATEWAY_DEMO).toEqual({ clients: 50, messages: 100, seed: 1 });
  });

  it('takes clients, messages, seed, a Redis store and --json', () => {
    const command = gatewayCommandFrom({
      gateway: true,
      clients: '20',
      messages: '1e3',
      seed: '7',
      store: 'redis://127.0.0.1:6379/2',
      json: true,
    });
    expect(command).toEqual({
      config: { clients: 20, messages: 1000, seed: 7, store: 'redis://127.0.0.1:6379/2' },
      json: true,
      progress: false,
    });
  });

  it('refuses counts out of bounds, a PostgreSQL store and the settlement demo options', () => {
    expect(() => gatewayCommandFrom({ gateway: true, clients: '0' })).toThrow(
      'Expected `--clients` to be a whole number from 1 to 1000, got `"0"`',
    );
    expect(() => gatewayCommandFrom({ gateway: true, messages: '1001' })).toThrow('`--messages`');
    expect(() => gatewayCommandFrom({ gateway: true, store: 'postgres://u:pw@127.0.0.1/db' })).toThrow(
      /`--store` to be memory or a Redis URL.*got `"postgres:\/\/u:\*\*\*@127\.0\.0\.1\/db"`/,
    );
    expect(() => gatewayCommandFrom({ gateway: true, settlements: '10' })).toThrow(
      'Expected `--settlements` to be left out with --gateway (an option of the settlement demo)',
    );
  });

  it('the settlement demo refuses the gateway demo options', () => {
    expect(() => demoCommandFrom({ clients: '10' })).toThrow(
      'Expected `--clients` to be given with --gateway only (an option of the gateway demo)',
    );
  });

  it('the help names the options', () => {
    for (const name of ['--gateway', '--clients N', '--messages N']) expect(DEMO_HELP).toContain(name);
  });
});
