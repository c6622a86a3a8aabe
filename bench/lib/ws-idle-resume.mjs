// The two one-shot measurements of the ws-gateway suite (not ops/s, so they run once, in setup,
// and their figures go in the suite's description):
//   idleMemory   the server process's memory per idle connection (hello done), gateway vs raw ws;
//   resumeAfterKill  two gateway nodes on one Redis store; clients on node A each hold unprocessed
//                stream messages; A is SIGKILLed; every client reconnects to node B with its
//                resume position: the time until each has welcome(recovered: true) and every
//                message it missed, in order.
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { median } from './harness.mjs';
import { newSession, openClients, ProtocolClient } from './ws-clients.mjs';
import { ask, startNode, stopNode } from './ws-ipc.mjs';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Server memory of `n` idle connections, per connection (bytes): rss and heap + external. */
export async function idleMemory(kind, n, tag) {
  const node = await startNode({ kind, store: 'memory' });
  try {
    const before = (await ask(node.child, { type: 'memory' })).memory;
    const clients = await openClients('protocol', node.url, n, tag);
    const after = (await ask(node.child, { type: 'memory' })).memory;
    for (const c of clients) c.close();
    const js = (m) => m.heapUsed + m.external;
    return { rss: (after.rss - before.rss) / n, js: (js(after) - js(before)) / n };
  } finally {
    await stopNode(node);
  }
}

/** The p-th percentile (0..1) of `xs`, nearest rank. */
const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))];
};

/**
 * `n` clients on node A each send `sent` echo messages and process (ack) the first `processed`
 * echoes; `extra` more per user are published from another process while they are still on A.
 * Then A is killed and all reconnect to B at once. Answers the per-client times (ms) from the kill
 * to the last missed message, and the count each received.
 */
export async function resumeAfterKill({ n, sent, processed, extra, prefix }) {
  const { createRedisStore } = await import('../../dist/redis/index.js');
  const { createPublisher } = await import('../../dist/ws/index.js');
  const a = await startNode({ kind: 'gateway', store: 'redis', prefix });
  const b = await startNode({ kind: 'gateway', store: 'redis', prefix });
  const client = new Redis(REDIS_URL);
  const onA = [];
  try {
    for (let i = 0; i < n; i++)
      onA.push(
        new ProtocolClient(a.url, { user: `rs-u${i}`, session: newSession(), processUpTo: processed }),
      );
    await Promise.all(onA.map((c) => c.ready));
    await Promise.all(onA.map((c) => c.run(sent, processed)));
    const publisher = createPublisher({ store: createRedisStore({ client, prefix }) });
    for (const c of onA) for (let k = 0; k < extra; k++) await publisher.publish(c.user, 'note', { k });
    const end = sent + extra;

    const dead = new Promise((resolve) => a.child.once('exit', resolve));
    a.child.kill('SIGKILL');
    await dead;
    const t0 = performance.now();
    const times = await Promise.all(
      onA.map(async (old) => {
        const c = new ProtocolClient(b.url, {
          user: old.user,
          session: old.session,
          resume: { offset: old.last, epoch: old.epoch },
        });
        const caughtUp = new Promise((resolve) => {
          c.onMessage = (f) => {
            if (f.offset === end) resolve();
          };
        });
        const w = await c.ready;
        if (!w.recovered || !w.continued || w.offset !== processed)
          throw new Error(`${old.user}: welcome ${JSON.stringify(w)} after a resume from ${processed}`);
        await caughtUp;
        const ms = performance.now() - t0;
        if (c.echoes !== end - processed || c.failure !== undefined)
          throw new Error(`${old.user}: ${c.echoes} messages, expected ${end - processed} (${c.failure})`);
        c.close();
        return ms;
      }),
    );
    return {
      n,
      missed: end - processed,
      p50: median(times),
      p99: percentile(times, 0.99),
      total: Math.max(...times),
    };
  } finally {
    for (const c of onA) c.close();
    await stopNode(b);
    client.disconnect();
  }
}
