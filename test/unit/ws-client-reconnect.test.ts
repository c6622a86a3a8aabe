// The client's reconnects (docs/ws-protocol.md sections 5 and 6): full-jitter backoff, the close
// codes that stop it and the one that skips the wait, the error frame's resume position, a silent
// server given up on, and the options a factory refuses.
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { backoffDelay } from '../../src/ws/client/backoff.js';
import { afterClose } from '../../src/ws/client/close-policy.js';
import {
  type ClientOptions,
  createClient,
  isWsClientError,
  type WsClientError,
} from '../../src/ws/client/index.js';
import { FakeServer, type FakeServerOptions, until } from '../support/ws-fake-server.js';

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function setup(serverOptions: FakeServerOptions = {}, clientOptions: Partial<ClientOptions> = {}) {
  const server = await FakeServer.start(serverOptions);
  cleanup.push(() => server.close());
  const client = createClient({
    url: server.url,
    WebSocket,
    reconnect: { minMs: 5, maxMs: 20 },
    ...clientOptions,
  });
  cleanup.push(() => client.close());
  const errors: WsClientError[] = [];
  const states: string[] = [];
  client.on('error', (e) => errors.push(e));
  client.on('state', (s) => states.push(s));
  return { server, client, errors, states };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('backoffDelay: full jitter', () => {
  it('is uniform in [0, min(maxMs, minMs x 2^attempt)), whatever the random source says', () => {
    const nearOne = () => 1 - Number.EPSILON;
    for (let attempt = 0; attempt < 40; attempt++) {
      const ceiling = Math.min(10_000, 250 * 2 ** attempt);
      expect(backoffDelay(attempt, 250, 10_000, () => 0)).toBe(0);
      const top = backoffDelay(attempt, 250, 10_000, nearOne);
      expect(top).toBeLessThan(ceiling);
      expect(top).toBeGreaterThanOrEqual(ceiling - 1);
      expect(backoffDelay(attempt, 250, 10_000, () => 0.5)).toBe(Math.floor(ceiling / 2));
    }
    expect(backoffDelay(3, 250, 10_000, () => 7)).toBeLessThan(2000); // clamped into [0, 1)
    expect(backoffDelay(3, 250, 10_000, () => -1)).toBe(0);
    expect(backoffDelay(10_000, 250, 10_000, nearOne)).toBeLessThan(10_000);
  });

  it('the client draws one jitter per reconnect and waits what it says', async () => {
    let draws = 0;
    const { server } = await setup(
      {},
      {
        reconnect: { minMs: 60_000, maxMs: 60_000 },
        random: () => {
          draws++;
          return draws === 1 ? 0 : 0.5; // the first reconnect at once, a second one 30 s away
        },
      },
    );
    (await server.welcomed(0)).terminate();
    await server.welcomed(1); // after a 0 ms wait
    server.connections[1]?.terminate();
    await sleep(300);
    expect(server.connections).toHaveLength(2); // the 30 s wait holds
    expect(draws).toBe(2);
  });
});

describe('close codes (section 6)', () => {
  it('1008: no reconnect; state closed, an error event with the code, pending sends rejected', async () => {
    const { server, client, errors, states } = await setup();
    const conn = await server.welcomed(0);
    server.autoAck = false;
    const pending = client.send('t', 1).catch((e: unknown) => e);
    await until(() => conn.msgs().length === 1, 'the message');
    conn.error('AUTH_FAILED', 'token expired');
    expect(await pending).toMatchObject({ code: 'CLOSED', outcome: 'unknown' });
    expect(client.state).toBe('closed');
    expect(states.at(-1)).toBe('closed');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 'AUTH_FAILED', closeCode: 1008, message: 'token expired' });
    expect(isWsClientError(errors[0], 'AUTH_FAILED')).toBe(true);
    await sleep(200);
    expect(server.connections).toHaveLength(1);
  });

  it('1009: no reconnect either', async () => {
    const { server, client, errors } = await setup();
    (await server.welcomed(0)).error('FRAME_TOO_LARGE', 'too big');
    await until(() => client.state === 'closed', 'closed');
    expect(errors[0]).toMatchObject({ code: 'FRAME_TOO_LARGE', closeCode: 1009 });
    await sleep(200);
    expect(server.connections).toHaveLength(1);
  });

  it('1001 (DRAINING): reconnects at once, resuming from the error frame position', async () => {
    const { server, client, errors } = await setup(
      {},
      { reconnect: { minMs: 60_000, maxMs: 60_000 }, random: () => 0.5 },
    );
    const conn = await server.welcomed(0);
    // The stream lost its history (a new epoch): the client's position is the server's now.
    server.publish('n', 1);
    await until(() => client.position?.offset === 1, 'message 1');
    conn.error('DRAINING', 'node shutting down', { resume: { offset: 1, epoch: 'ep1' } });
    const second = await server.welcomed(1); // within the test timeout: not after a 30 s backoff
    expect(second.hello?.resume).toEqual({ offset: 1, epoch: 'ep1' });
    expect(errors[0]).toMatchObject({
      code: 'DRAINING',
      closeCode: 1001,
      resume: { offset: 1, epoch: 'ep1' },
    });
    // The server sent its welcome; the client opens once it has read it.
    await until(() => client.state === 'open', 'open again');
  });

  it("an error frame's resume in another epoch becomes the resume point", async () => {
    const { server } = await setup();
    const conn = await server.welcomed(0);
    conn.error('SLOW_CONSUMER', 'too slow', { resume: { offset: 9, epoch: 'ep0' } });
    const second = await server.welcomed(1);
    expect(second.hello?.resume).toEqual({ offset: 9, epoch: 'ep0' });
  });

  it('1013 and 1011: backoff and resume; states go reconnecting then open', async () => {
    const { server, client, states } = await setup();
    server.publish('n', 1);
    const conn = await server.welcomed(0);
    await until(() => client.position?.offset === 1, 'message 1');
    conn.error('TOO_MANY_CONNECTIONS', 'busy');
    const second = await server.welcomed(1);
    expect(second.hello?.resume).toEqual({ offset: 1, epoch: 'ep1' });
    second.error('INTERNAL', 'store down');
    await server.welcomed(2);
    await until(() => client.state === 'open', 'open');
    expect(states).toEqual(['open', 'reconnecting', 'open', 'reconnecting', 'open']);
  });

  it('waits at least retryAfterMs of an error frame', async () => {
    const { server } = await setup();
    const conn = await server.welcomed(0);
    const t0 = performance.now();
    conn.error('TOO_MANY_CONNECTIONS', 'busy', { retryAfterMs: 300 });
    await server.welcomed(1);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
  });

  it('reconnect false: the first drop closes the client', async () => {
    const { server, client, errors } = await setup({}, { reconnect: false });
    (await server.welcomed(0)).terminate();
    await until(() => client.state === 'closed', 'closed');
    expect(errors[0]).toMatchObject({ code: 'TRANSPORT' });
  });
});

describe('heartbeats (section 5)', () => {
  it('gives up on a server silent for 2 x heartbeatMs + 5 s, then reconnects', async () => {
    const { server, errors } = await setup({ heartbeatMs: 1000 });
    const conn = await server.welcomed(0);
    const t0 = performance.now();
    await server.welcomed(1);
    // 2 x 1 s + 5 s; a loaded machine only makes it later.
    expect(performance.now() - t0).toBeGreaterThanOrEqual(6_900);
    expect(errors[0]).toMatchObject({ code: 'TIMEOUT' });
    await until(() => conn.closed, 'the old connection closed');
  }, 30_000);

  it('a ping keeps a quiet connection alive', async () => {
    const { server, errors } = await setup({ heartbeatMs: 1000 });
    const conn = await server.welcomed(0);
    const pinger = setInterval(() => conn.send({ op: 'ping' }), 1000);
    try {
      await sleep(8_000);
    } finally {
      clearInterval(pinger);
    }
    expect(server.connections).toHaveLength(1);
    expect(errors).toEqual([]);
    expect(conn.count('pong')).toBeGreaterThanOrEqual(4);
  }, 30_000);
});

describe('createClient options', () => {
  it('names a missing WebSocket constructor', () => {
    expect(() => createClient({ url: 'ws://127.0.0.1:9' })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_OPTION', option: 'WebSocket' }),
    );
  });

  it('refuses unknown keys with a did-you-mean, and bad values by name', () => {
    const base = { url: 'ws://127.0.0.1:9', WebSocket };
    expect(() => createClient({ ...base, maxInflight: 4 } as never)).toThrow(/did you mean `maxInFlight`/);
    expect(() => createClient({ ...base, reconnect: { minMs: 10, max: 5 } } as never)).toThrow(
      /reconnect\.max/,
    );
    const bad: [string, Partial<ClientOptions>][] = [
      ['url', { url: 'http://x' }],
      ['session', { session: 'short' }],
      ['resume.offset', { resume: { offset: -1, epoch: 'e' } }],
      ['resume.epoch', { resume: { offset: 1, epoch: 'a b' } }],
      ['maxInFlight', { maxInFlight: 2000 }],
      ['maxQueued', { maxQueued: 0 }],
      ['reconnect.maxMs', { reconnect: { minMs: 100, maxMs: 10 } }],
      ['token', { token: '' }],
    ];
    for (const [option, patch] of bad) {
      expect(() => createClient({ ...base, ...patch }), option).toThrow(expect.objectContaining({ option }));
    }
  });

  it('reports a throwing listener as an error event and carries on', async () => {
    const { server, client, errors } = await setup();
    client.on('message', () => {
      throw new Error('app bug');
    });
    const got: number[] = [];
    const off = client.on('message', (m) => got.push(m.offset));
    await server.welcomed(0);
    server.publish('n', 1);
    await until(() => got.length === 1, 'message 1');
    expect(errors[0]).toMatchObject({ code: 'LISTENER' });
    off();
    server.publish('n', 2);
    await until(() => client.position?.offset === 2, 'message 2');
    expect(got).toEqual([1]);
  });

  it('calls the token function before every connect, and reports its failure as TOKEN, retrying', async () => {
    let calls = 0;
    const { server, errors } = await setup(
      {},
      {
        token: () => {
          calls++;
          if (calls === 2) throw new Error('auth server down');
          return `t${calls}`;
        },
      },
    );
    (await server.welcomed(0)).terminate();
    const second = await server.welcomed(1);
    expect(second.hello?.token).toBe('t3');
    expect(errors.map((e) => e.code)).toEqual(['TRANSPORT', 'TOKEN']);
  });
});

describe('afterClose: section 6 as a table', () => {
  it('stops on 1008 and 1009, reconnects at once on 1001, backs off on the rest', () => {
    const frame = (
      code: 'AUTH_FAILED' | 'DRAINING' | 'INTERNAL' | 'SLOW_CONSUMER',
      retryAfterMs?: number,
    ) => ({
      op: 'error' as const,
      code,
      message: '',
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    });
    expect(afterClose(undefined, 1008)).toEqual({ action: 'stop' });
    expect(afterClose(undefined, 1009)).toEqual({ action: 'stop' });
    expect(afterClose(frame('AUTH_FAILED'), 1006)).toEqual({ action: 'stop' }); // the frame's code counts
    expect(afterClose(frame('DRAINING'), 1001)).toEqual({ action: 'reconnect', at: 'once' });
    expect(afterClose(undefined, 1001)).toEqual({ action: 'reconnect', at: 'once' });
    expect(afterClose(frame('INTERNAL'), 1011)).toEqual({ action: 'reconnect', at: 'backoff', atLeastMs: 0 });
    expect(afterClose(frame('SLOW_CONSUMER', 500), 1013)).toEqual({
      action: 'reconnect',
      at: 'backoff',
      atLeastMs: 500,
    });
    for (const code of [1000, 1005, 1006, 1011, 1013, 4000]) {
      expect(afterClose(undefined, code)).toMatchObject({ action: 'reconnect', at: 'backoff' });
    }
  });
});
