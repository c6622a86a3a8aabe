// The gateway's handshake (docs/ws-protocol.md sections 1, 2, 6, 8): welcome, the refusals before
// and after the upgrade, the connection caps, and one writer per session on a node.
import { afterEach, describe, expect, it } from 'vitest';
import { createGateway, type Gateway } from '../../src/ws/index.js';
import { connectRaw, newSession, open, type RawClient, WAIT_MS } from '../support/ws-raw-client.js';

const gateways: Gateway[] = [];
const clients: RawClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.terminate();
  for (const g of gateways.splice(0)) await g.close({ drain: '1s' });
});

async function gateway(options: Omit<Parameters<typeof createGateway>[0], 'port'> = {}) {
  const g = await createGateway({ port: 0, ...options });
  gateways.push(g);
  return g;
}
const track = <T extends { client: RawClient }>(x: T) => {
  clients.push(x.client);
  return x;
};

describe('handshake', () => {
  it('welcome carries the documented fields', async () => {
    const g = await gateway({ heartbeat: '20s', sessionTtl: '5m', maxInFlight: 8, maxFrameBytes: 4096 });
    const session = newSession();
    const { welcome } = track(await open(g.port as number, session));
    expect(welcome).toEqual({
      op: 'welcome',
      v: 1,
      user: 'anonymous',
      session,
      continued: false,
      seq: 0,
      epoch: expect.stringMatching(/^[A-Za-z0-9_-]{1,64}$/),
      offset: 0,
      recovered: false,
      limits: { maxFrameBytes: 4096, maxInFlight: 8, heartbeatMs: 20_000, sessionTtlMs: 300_000 },
    });
  });

  it('BAD_VERSION without the subprotocol (close 1008)', async () => {
    const g = await gateway();
    const c = await connectRaw(g.port as number, { protocol: null });
    clients.push(c);
    c.hello(newSession());
    const { error, close } = await c.failure();
    expect(error?.code).toBe('BAD_VERSION');
    expect(close).toEqual({ code: 1008, reason: 'BAD_VERSION' });
  });

  it('UNEXPECTED_FRAME when the first frame is not hello, and on a second hello', async () => {
    const g = await gateway({ handlers: { t: () => {} } });
    const c = await connectRaw(g.port as number);
    clients.push(c);
    c.msg(1, 'a', 't');
    const first = await c.failure();
    expect(first.error?.code).toBe('UNEXPECTED_FRAME');
    expect(first.close.code).toBe(1008);

    const { client } = track(await open(g.port as number, newSession()));
    client.hello(newSession());
    const second = await client.failure();
    expect(second.error?.code).toBe('UNEXPECTED_FRAME');
    expect(second.close.code).toBe(1008);
  });

  it('AUTH_FAILED when auth answers null; the default auth refuses any token', async () => {
    const g = await gateway({ auth: (token) => (token === 'good' ? 'u1' : null) });
    const ok = track(await open(g.port as number, newSession(), { token: 'good' }));
    expect(ok.welcome.user).toBe('u1');
    const c = await connectRaw(g.port as number);
    clients.push(c);
    c.hello(newSession(), { token: 'bad' });
    const refused = await c.failure();
    expect(refused.error?.code).toBe('AUTH_FAILED');
    expect(refused.close).toEqual({ code: 1008, reason: 'AUTH_FAILED' });

    const d = await gateway();
    const t = await connectRaw(d.port as number);
    clients.push(t);
    t.hello(newSession(), { token: 'anything' });
    expect((await t.failure()).error?.code).toBe('AUTH_FAILED');
    expect(track(await open(d.port as number, newSession())).welcome.user).toBe('anonymous');
  });

  it('refuses a cross-site Origin with 403 by default; same-origin and listed origins pass', async () => {
    const events: unknown[] = [];
    const g = await gateway({ observer: (e) => events.push(e) });
    const port = g.port as number;
    await expect(connectRaw(port, { headers: { origin: 'https://evil.example' } })).rejects.toMatchObject({
      status: 403,
    });
    expect(events).toContainEqual({ part: 'gateway', type: 'refused', reason: 'origin', status: 403 });
    const same = await connectRaw(port, { headers: { origin: `http://127.0.0.1:${port}` } });
    clients.push(same);
    await same.handshake(newSession());

    const listed = await gateway({ origins: ['https://app.example'] });
    const c = await connectRaw(listed.port as number, { headers: { origin: 'https://app.example' } });
    clients.push(c);
    await c.handshake(newSession());
    await expect(
      connectRaw(listed.port as number, { headers: { origin: 'https://other.example' } }),
    ).rejects.toMatchObject({ status: 403 });
    // A list replaces the default: same-origin is not implied.
    await expect(
      connectRaw(listed.port as number, { headers: { origin: `http://127.0.0.1:${listed.port}` } }),
    ).rejects.toMatchObject({ status: 403 });
  });

  it('a wrong path is 404 before the upgrade', async () => {
    const g = await gateway({ path: '/ws' });
    await expect(connectRaw(g.port as number, { path: '/other' })).rejects.toMatchObject({ status: 404 });
    track(await open(g.port as number, newSession(), {}, { path: '/ws' }));
  });

  it('maxConnectionsPerUser: TOO_MANY_CONNECTIONS close 1013; a freed slot is usable again', async () => {
    const g = await gateway({ maxConnectionsPerUser: 2, auth: (t) => t ?? null });
    const port = g.port as number;
    const a = track(await open(port, newSession(), { token: 'u1' }));
    track(await open(port, newSession(), { token: 'u1' }));
    const c = await connectRaw(port);
    clients.push(c);
    c.hello(newSession(), { token: 'u1' });
    const refused = await c.failure();
    expect(refused.error?.code).toBe('TOO_MANY_CONNECTIONS');
    expect(refused.close).toEqual({ code: 1013, reason: 'TOO_MANY_CONNECTIONS' });
    // Another user is not counted against u1.
    track(await open(port, newSession(), { token: 'u2' }));
    await a.client.close();
    await expect.poll(() => g.connections, { timeout: WAIT_MS }).toBe(2);
    track(await open(port, newSession(), { token: 'u1' }));
  });

  it('maxConnections: the node refuses past it with TOO_MANY_CONNECTIONS close 1013', async () => {
    const g = await gateway({ maxConnections: 2 });
    const port = g.port as number;
    track(await open(port, newSession()));
    track(await open(port, newSession()));
    const c = await connectRaw(port);
    clients.push(c);
    const refused = await c.failure();
    expect(refused.error?.code).toBe('TOO_MANY_CONNECTIONS');
    expect(refused.close.code).toBe(1013);
    await expect.poll(() => g.connections, { timeout: WAIT_MS }).toBe(2);
  });

  it('a refused connection does not count: the cap admits again after refusals', async () => {
    const g = await gateway({ maxConnectionsPerUser: 1 });
    const port = g.port as number;
    const first = track(await open(port, newSession()));
    for (let i = 0; i < 3; i++) {
      const c = await connectRaw(port);
      clients.push(c);
      c.hello(newSession());
      expect((await c.failure()).error?.code).toBe('TOO_MANY_CONNECTIONS');
    }
    await first.client.close();
    await expect.poll(() => g.connections, { timeout: WAIT_MS }).toBe(0);
    track(await open(port, newSession()));
  });

  it('a second connection of the same session ends the first with SESSION_REPLACED (1008)', async () => {
    const g = await gateway({ maxConnectionsPerUser: 1 });
    const session = newSession();
    const a = track(await open(g.port as number, session));
    const b = track(await open(g.port as number, session));
    const ended = await a.client.failure();
    expect(ended.error?.code).toBe('SESSION_REPLACED');
    expect(ended.close).toEqual({ code: 1008, reason: 'SESSION_REPLACED' });
    expect(b.client.closeInfo).toBeUndefined();
    expect(b.welcome.session).toBe(session);
  });
});
