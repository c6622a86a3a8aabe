// Client messages through the gateway (docs/ws-protocol.md section 3): exactly one outcome per id,
// decided in seq order, across reconnects and across two nodes on one Redis store; the BAD_SEQ and
// TOO_MANY_IN_FLIGHT refusals; an exactly-once effect through a ledger when a node dies mid-handler.
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createLedger, memoryStore } from '../../src/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import type { Store } from '../../src/store/store.js';
import { BodyRefusedError, type Gateway } from '../../src/ws/index.js';
import { gatewayEnv } from '../support/ws-gateway-env.js';
import { connectRaw, type Frame, newSession, sleep } from '../support/ws-raw-client.js';
import { cleanupPrefix, REDIS_URL } from './redis-env.js';

const { clients, gateways, redisClients, prefix, redisStore, gateway, connect } =
  gatewayEnv('ws-gateway-inbound');
const ackOf = (seq: number) => (f: Frame) => f.op === 'ack' && f.seq === seq;

const backends: [string, () => Store][] = [
  ['memory', () => memoryStore()],
  ['redis', redisStore],
];

describe.each(backends)('inbound on %s', (_name, makeStore) => {
  it('a gap across a reconnect is filled by the re-send; every seq runs once, in order', async () => {
    const ran: number[] = [];
    const g = await gateway({ store: makeStore(), handlers: { t: (m) => void ran.push(m.seq) } });
    const session = newSession();
    const a = await connect(g, session);
    a.client.msg(1, 'id-1', 't');
    a.client.msg(3, 'id-3', 't'); // seq 2 "lost": 3 waits for it
    await a.client.waitFor(ackOf(1));
    await sleep(50);
    expect(a.client.acks().map((f) => f.seq)).toEqual([1]);
    await a.client.close();

    const b = await connect(g, session);
    expect(b.welcome).toMatchObject({ continued: true, seq: 1 });
    b.client.msg(2, 'id-2', 't');
    b.client.msg(3, 'id-3', 't');
    await b.client.waitFor(ackOf(3));
    expect(b.client.acks()).toEqual([
      { op: 'ack', seq: 2, id: 'id-2', outcome: 'handled' },
      { op: 'ack', seq: 3, id: 'id-3', outcome: 'handled' },
    ]);
    expect(ran).toEqual([1, 2, 3]);
  });

  it('a re-send after a reconnect gets the original outcome, marked duplicate; nothing runs again', async () => {
    const count = new Map<string, number>();
    const g = await gateway({
      store: makeStore(),
      handlers: {
        ok: (m) => void count.set(m.id, (count.get(m.id) ?? 0) + 1),
        boom: (m) => {
          count.set(m.id, (count.get(m.id) ?? 0) + 1);
          throw new Error('handler bug');
        },
      },
    });
    const session = newSession();
    const a = await connect(g, session);
    a.client.msg(1, 'x1', 'ok');
    a.client.msg(2, 'x2', 'boom');
    a.client.msg(3, 'x3', 'nope');
    await a.client.waitFor(ackOf(3));
    const original = a.client.acks();
    expect(original).toEqual([
      { op: 'ack', seq: 1, id: 'x1', outcome: 'handled' },
      { op: 'ack', seq: 2, id: 'x2', outcome: 'rejected', code: 'HANDLER_FAILED' },
      { op: 'ack', seq: 3, id: 'x3', outcome: 'rejected', code: 'UNKNOWN_TYPE' },
    ]);
    a.client.terminate(); // as if the acks were lost with the connection
    const b = await connect(g, session);
    expect(b.welcome).toMatchObject({ continued: true, seq: 3 });
    b.client.msg(1, 'x1', 'ok');
    b.client.msg(2, 'x2', 'boom');
    b.client.msg(3, 'x3', 'nope');
    b.client.msg(4, 'x4', 'ok');
    await b.client.waitFor(ackOf(4));
    expect(b.client.acks()).toEqual([
      ...original.map((f) => ({ ...f, duplicate: true })),
      { op: 'ack', seq: 4, id: 'x4', outcome: 'handled' },
    ]);
    expect(Object.fromEntries(count)).toEqual({ x1: 1, x2: 1, x4: 1 });
  });

  it('frames sent right behind hello (before welcome) are taken, in order', async () => {
    const ran: number[] = [];
    const g = await gateway({ store: makeStore(), handlers: { t: (m) => void ran.push(m.seq) } });
    const c = await connectRaw(g.port as number);
    clients.push(c);
    c.hello(newSession());
    for (let s = 1; s <= 5; s++) c.msg(s, `e${s}`, 't');
    await c.waitFor(ackOf(5));
    expect(c.frames[0]?.op).toBe('welcome');
    expect(c.acks().map((f) => f.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(ran).toEqual([1, 2, 3, 4, 5]);
  });

  it('BODY_REFUSED from validate or a BodyRefusedError; the handler does not take effect', async () => {
    const ran: string[] = [];
    const g = await gateway({
      store: makeStore(),
      handlers: {
        checked: { handle: (m) => void ran.push(m.id), validate: (b) => typeof b === 'number' || 'a number' },
        refuses: () => {
          throw new BodyRefusedError('no');
        },
      },
    });
    const { client } = await connect(g, newSession());
    client.msg(1, 'a', 'checked', 'x');
    client.msg(2, 'b', 'checked', 2);
    client.msg(3, 'c', 'refuses', {});
    await client.waitFor(ackOf(3));
    expect(client.acks()).toEqual([
      { op: 'ack', seq: 1, id: 'a', outcome: 'rejected', code: 'BODY_REFUSED' },
      { op: 'ack', seq: 2, id: 'b', outcome: 'handled' },
      { op: 'ack', seq: 3, id: 'c', outcome: 'rejected', code: 'BODY_REFUSED' },
    ]);
    expect(ran).toEqual(['b']);
  });

  it.each([
    ['a decided seq under another id', [[1, 'a']], [1, 'other']],
    ['a decided id under another seq', [[1, 'a']], [2, 'a']],
    ['a waiting seq under another id', [[3, 'w']], [3, 'w2']],
    ['a waiting id under another seq', [[3, 'w']], [4, 'w']],
  ] as const)('BAD_SEQ: %s; the session state is unchanged', async (_t, before, bad) => {
    const ran: string[] = [];
    const g = await gateway({ store: makeStore(), handlers: { t: (m) => void ran.push(m.id) } });
    const session = newSession();
    const a = await connect(g, session);
    for (const [seq, id] of before) a.client.msg(seq, id, 't');
    if (before[0]?.[0] === 1) await a.client.waitFor(ackOf(1));
    a.client.msg(bad[0], bad[1], 't');
    const { error, close } = await a.client.failure();
    expect(error?.code).toBe('BAD_SEQ');
    expect(close.code).toBe(1008);
    const b = await connect(g, session);
    expect(b.welcome.seq).toBe(before[0]?.[0] === 1 ? 1 : 0);
    expect(ran).toEqual(before[0]?.[0] === 1 ? ['a'] : []);
  });

  it('BAD_SEQ for a seq older than the kept outcomes', async () => {
    const g = await gateway({ store: makeStore(), maxInFlight: 2, handlers: { t: () => {} } });
    const session = newSession();
    const a = await connect(g, session);
    for (let s = 1; s <= 4; s++) {
      a.client.msg(s, `i${s}`, 't');
      await a.client.waitFor(ackOf(s));
    }
    a.client.msg(1, 'i1', 't');
    expect((await a.client.failure()).error?.code).toBe('BAD_SEQ');
  });

  it('TOO_MANY_IN_FLIGHT: a seq more than maxInFlight ahead, and more frames than maxInFlight', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const ran: number[] = [];
    const g = await gateway({
      store: makeStore(),
      maxInFlight: 3,
      handlers: {
        t: (m) => void ran.push(m.seq),
        slow: async (m) => {
          ran.push(m.seq);
          await gate;
        },
      },
    });
    const a = await connect(g, newSession());
    a.client.msg(4, 'far', 't');
    const far = await a.client.failure();
    expect(far.error?.code).toBe('TOO_MANY_IN_FLIGHT');
    expect(far.close.code).toBe(1008);

    const session = newSession();
    const b = await connect(g, session);
    b.client.msg(1, 'a', 'slow');
    b.client.msg(2, 'b', 't');
    b.client.msg(3, 'c', 't');
    b.client.msg(4, 'd', 't');
    const many = await b.client.failure();
    expect(many.error?.code).toBe('TOO_MANY_IN_FLIGHT');
    release();
    // The handler that had started still finishes and records; nothing after it ran.
    const c = await connect(g, session);
    await expect.poll(async () => ran).toEqual([1]);
    c.client.msg(1, 'a', 'slow');
    c.client.msg(2, 'b', 't');
    await c.client.waitFor(ackOf(2));
    expect(c.client.acks()[0]).toMatchObject({ seq: 1, duplicate: true, outcome: 'handled' });
    expect(ran).toEqual([1, 2]);
  });
});

describe('two nodes on one Redis store', () => {
  it('seq 1..N sent on node A, the rest re-sent on node B: each ran once, in seq order', async () => {
    const N = 30;
    const ran: { node: string; seq: number }[] = [];
    const handler = (node: string) => async (m: { seq: number }) => {
      ran.push({ node, seq: m.seq });
      await sleep(m.seq % 3); // handlers still running when the connection drops
    };
    const A = await gateway({ store: redisStore(), handlers: { t: handler('A') } });
    const B = await gateway({ store: redisStore(), handlers: { t: handler('B') } });
    const session = newSession();
    const a = await connect(A, session);
    for (let s = 1; s <= N; s++) a.client.msg(s, `m-${s}`, 't');
    await a.client.waitFor(ackOf(8));
    a.client.terminate();
    const acked = new Set(a.client.acks().map((f) => f.seq as number));

    const b = await connect(B, session);
    expect(b.welcome.continued).toBe(true);
    for (let s = 1; s <= N; s++) if (!acked.has(s)) b.client.msg(s, `m-${s}`, 't');
    await b.client.waitFor(ackOf(N));
    const all = [...a.client.acks(), ...b.client.acks()];
    // Every seq acked (a seq whose handler ran as A dropped is acked on B, marked duplicate), all
    // handled, B's acks in seq order; and each handler ran once, in seq order.
    expect(new Set(all.map((f) => f.seq)).size).toBe(N);
    const onB = b.client.acks().map((f) => f.seq as number);
    expect(onB).toEqual([...onB].sort((x, y) => x - y));
    expect(all.every((f) => f.outcome === 'handled')).toBe(true);
    await A.close({ drain: '2s' });
    expect(ran.map((r) => r.seq)).toEqual(Array.from({ length: N }, (_, i) => i + 1));
  });

  it('a connection replaced from another node is ended at its next message; its handler does not run', async () => {
    const ran: string[] = [];
    const A = await gateway({ store: redisStore(), handlers: { t: (m) => void ran.push(`A${m.seq}`) } });
    const B = await gateway({ store: redisStore(), handlers: { t: (m) => void ran.push(`B${m.seq}`) } });
    const session = newSession();
    const a = await connect(A, session);
    a.client.msg(1, 'one', 't');
    await a.client.waitFor(ackOf(1));
    const b = await connect(B, session);
    expect(b.welcome).toMatchObject({ continued: true, seq: 1 });
    a.client.msg(2, 'two-on-a', 't');
    const { error, close } = await a.client.failure();
    expect(error?.code).toBe('SESSION_REPLACED');
    expect(close.code).toBe(1008);
    b.client.msg(2, 'two', 't');
    expect(await b.client.waitFor(ackOf(2))).toEqual({ op: 'ack', seq: 2, id: 'two', outcome: 'handled' });
    expect(ran).toEqual(['A1', 'B2']);
  });

  it('a node dies mid-handler: the re-send on another node takes effect once through the ledger', async () => {
    const storeA = redisStore();
    const storeB = redisStore();
    const owner = `player-${newSession()}`;
    const ledgerA = createLedger({ store: storeA, capacity: 16 });
    const ledgerB = createLedger({ store: storeB, capacity: 16 });
    let entered!: () => void;
    const inA = new Promise<void>((r) => {
      entered = r;
    });
    const runs: string[] = [];
    const A = await gateway({
      store: storeA,
      lease: '300ms',
      handlers: {
        credit: async (m) => {
          runs.push('A');
          await ledgerA.apply({ owner, signature: m.key, deltas: { coins: 5 } });
          entered();
          await new Promise(() => {}); // the node dies before recording the outcome
        },
      },
    });
    const B = await gateway({
      store: storeB,
      lease: '300ms',
      handlers: {
        credit: async (m) => {
          runs.push('B');
          await ledgerB.apply({ owner, signature: m.key, deltas: { coins: 5 } });
        },
      },
    });
    const session = newSession();
    const a = await connect(A, session);
    a.client.msg(1, 'pay-1', 'credit', { n: 5 });
    await inA;
    gateways.splice(gateways.indexOf(A), 1);
    await A.close({ drain: '50ms' });

    const b = await connect(B, session);
    b.client.msg(1, 'pay-1', 'credit', { n: 5 });
    b.client.msg(2, 'pay-2', 'credit', { n: 5 });
    const ack1 = await b.client.waitFor(ackOf(1));
    await b.client.waitFor(ackOf(2));
    expect(ack1).toMatchObject({ outcome: 'handled' });
    expect(runs).toEqual(['A', 'B', 'B']); // at least once: the handler ran again on B
    expect(await ledgerB.balances(owner)).toEqual({ coins: 10n }); // the effect: once per id
  });
});

describe('limits across nodes', () => {
  type By = 'user' | 'user-type';
  /** Sends 8 messages from one user, each on a new connection, alternating nodes when `nodes` is 2. */
  async function run(by: By, algorithm: 'sliding-window' | 'fixed-window', nodes: 1 | 2): Promise<string[]> {
    const store = redisStore();
    const limits = [{ by, algorithm, limit: 5, window: '1m' }] as const;
    const handlers = { a: () => {}, b: () => {} };
    const auth = (t: string | undefined) => t ?? null;
    const A = await gateway({ store, limits, handlers, auth });
    const B = nodes === 2 ? await gateway({ store: redisStore(), limits, handlers, auth }) : A;
    // A unique user (and, for `ip`, a unique user per connection: the ip is the shared one).
    const user = `lim-${newSession()}`;
    const outcomes: string[] = [];
    const seqs = new Map<string, number>();
    for (let i = 0; i < 8; i++) {
      const node = i % 2 === 0 ? A : B;
      const session = newSession();
      const { client } = await connect(node, session, { token: user });
      const type = by === 'user-type' && i === 7 ? 'b' : 'a';
      const seq = (seqs.get(session) ?? 0) + 1;
      seqs.set(session, seq);
      client.msg(seq, `m${i}`, type);
      const ack = await client.waitFor(ackOf(seq));
      outcomes.push(ack.outcome === 'limited' ? `limited(${ack.code},${ack.retryAfterMs > 0})` : ack.outcome);
      await client.close();
    }
    return outcomes;
  }

  it.each([
    ['user', 'sliding-window'],
    ['user', 'fixed-window'],
    ['user-type', 'sliding-window'],
  ] as const)('by %s (%s): alternating two nodes gives the outcomes of one node', async (by, algorithm) => {
    const one = await run(by, algorithm, 1);
    const two = await run(by, algorithm, 2);
    const limited = 'limited(RATE_LIMITED,true)';
    const expected = ['handled', 'handled', 'handled', 'handled', 'handled', limited, limited];
    expected.push(by === 'user-type' ? 'handled' : limited);
    expect(one).toEqual(expected);
    expect(two).toEqual(expected);
  });

  it('by type, and by ip behind a trusted proxy (X-Forwarded-For), across nodes', async () => {
    const store = () => {
      const c = new Redis(REDIS_URL);
      redisClients.push(c);
      return createRedisStore({ client: c, prefix: `${prefix}tp-${newSession()}:` });
    };
    const s = store();
    const limits = [
      { by: 'type', algorithm: 'fixed-window', limit: 2, window: '1m' },
      { by: 'ip', algorithm: 'fixed-window', limit: 3, window: '1m' },
    ] as const;
    const handlers = { a: () => {}, b: () => {} };
    const nodes = [
      await gateway({ store: s, limits, handlers, trustProxy: true }),
      await gateway({ store: s, limits, handlers, trustProxy: true }),
    ];
    const outcomes: string[] = [];
    const sends: [string, string][] = [
      ['10.0.0.1', 'a'],
      ['10.0.0.2', 'a'],
      ['10.0.0.3', 'a'], // type a: 3rd
      ['10.0.0.1', 'b'],
      ['10.0.0.1', 'b'], // ip .1: 3rd (b's 2nd)
      ['10.0.0.1', 'b'], // ip .1: 4th
    ];
    for (const [i, [ip, type]] of sends.entries()) {
      const c = await connectRaw((nodes[i % 2] as Gateway).port as number, {
        headers: { 'x-forwarded-for': `${ip}, 192.168.0.9` },
      });
      clients.push(c);
      await c.handshake(newSession());
      c.msg(1, `m${i}`, type);
      const ack = await c.waitFor(ackOf(1));
      outcomes.push(ack.outcome);
      await c.close();
    }
    expect(outcomes).toEqual(['handled', 'handled', 'limited', 'handled', 'handled', 'limited']);
  });

  it('by ip: users on one address share the limit across nodes', async () => {
    const limited = 'limited(RATE_LIMITED,true)';
    // A store prefix of its own: the address is every test's 127.0.0.1.
    const client = new Redis(REDIS_URL);
    redisClients.push(client);
    const ipPrefix = `${prefix}ip-${Date.now()}:`;
    const mk = () => {
      const c = new Redis(REDIS_URL);
      redisClients.push(c);
      return createRedisStore({ client: c, prefix: ipPrefix });
    };
    const limits = [{ by: 'ip', algorithm: 'sliding-window', limit: 5, window: '1m' }] as const;
    const auth = (t: string | undefined) => t ?? null;
    const A = await gateway({ store: mk(), limits, handlers: { a: () => {} }, auth });
    const B = await gateway({ store: mk(), limits, handlers: { a: () => {} }, auth });
    const outcomes: string[] = [];
    for (let i = 0; i < 7; i++) {
      const { client: c } = await connect(i % 2 === 0 ? A : B, newSession(), { token: `ipuser-${i}` });
      c.msg(1, `m${i}`, 'a');
      const ack = await c.waitFor(ackOf(1));
      outcomes.push(ack.outcome === 'limited' ? `limited(${ack.code},${ack.retryAfterMs > 0})` : ack.outcome);
      await c.close();
    }
    expect(outcomes).toEqual(['handled', 'handled', 'handled', 'handled', 'handled', limited, limited]);
    await cleanupPrefix(client, ipPrefix);
  });
});
