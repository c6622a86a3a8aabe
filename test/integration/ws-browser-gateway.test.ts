// onceflow/ws/client in headless Chromium (playwright-core on the system's chromium, never a
// downloaded browser) against 2 gateway node processes on Redis, behind a TCP proxy that plays the
// load balancer: the page sends and receives through node A; A is SIGKILLed while messages are
// in flight and more are sent; the proxy sends new connections to node B; the page's client
// reconnects there and resumes. A screenshot of the page is saved to .artifacts/ws-browser.png.
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger } from '../../src/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import type { ServerMessage } from '../../src/ws/client/index.js';
import type { SendResult } from '../../src/ws/client/outbox.js';
import { createPublisher } from '../../src/ws/index.js';
import { bundleClient, type MovingProxy, servePage, startMovingProxy } from '../support/ws-browser.js';
import { GatewayProcess } from '../support/ws-cluster.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
const ARTIFACTS = fileURLToPath(new URL('../../.artifacts/', import.meta.url));
const SCREENSHOT = `${ARTIFACTS}ws-browser.png`;
const USER = 'browser-1';

const prefix = runPrefix('ws-browser');
const redis = new Redis(REDIS_URL);
const store = createRedisStore({ client: redis, prefix });

/** The page's app: a client, what it received and the outcomes of what it sent, drawn as lists. */
const APP = `
const lib = globalThis.OnceflowClient;
const url = new URLSearchParams(location.search).get('ws');
const client = lib.createClient({ url, token: 'user:${USER}', reconnect: { minMs: 50, maxMs: 500 } });
const app = { client, received: [], outcomes: [], failures: [], welcomes: [] };
globalThis.app = app;
const li = (list, text) => {
  const item = document.createElement('li');
  item.textContent = text;
  document.getElementById(list).append(item);
};
client.on('state', (s) => { document.getElementById('state').textContent = s; });
client.on('welcome', (w) => {
  app.welcomes.push({ recovered: w.recovered, continued: w.continued, offset: w.offset });
  li('received', 'welcome: continued ' + w.continued + ', recovered ' + w.recovered + ', offset ' + w.offset);
});
client.on('message', (m) => {
  app.received.push(m);
  li('received', '#' + m.offset + ' ' + m.type + ' ' + JSON.stringify(m.body));
});
app.send = (type, id, delayMs) =>
  client.send(type, delayMs === undefined ? { id } : { id, delayMs }, { id }).then(
    (r) => {
      app.outcomes.push(r);
      li('sent', 'seq ' + r.seq + ' ' + r.id + ': ' + r.outcome + (r.duplicate ? ' (duplicate)' : ''));
    },
    (e) => { app.failures.push(String(e && e.code ? e.code : e)); },
  );
`;

const HTML = `<!doctype html>
<html><head><meta charset="utf-8"><title>onceflow/ws in Chromium</title>
<style>body{font:13px system-ui,sans-serif;margin:16px} ol{margin:0;padding-left:1.5em}
.cols{display:flex;gap:32px} h2{font-size:14px}</style></head>
<body><h1>onceflow/ws: node A killed, resumed on node B</h1>
<p>state: <b id="state">connecting</b></p>
<div class="cols"><div><h2>Sent (outcomes)</h2><ol id="sent"></ol></div>
<div><h2>Received (stream)</h2><ol id="received"></ol></div></div>
<script src="/client.js"></script><script src="/app.js"></script></body></html>`;

interface AppState {
  received: ServerMessage[];
  outcomes: SendResult[];
  failures: string[];
  welcomes: { recovered: boolean; continued: boolean; offset: number }[];
}
const state = (page: Page) =>
  page.evaluate(() => {
    const { received, outcomes, failures, welcomes } = (globalThis as unknown as { app: AppState }).app;
    return { received, outcomes, failures, welcomes };
  });
type PageApp = { send(type: string, id: string, delayMs?: number): Promise<void> };
const send = (page: Page, type: string, ids: string[], delayMs?: number) =>
  page.evaluate(
    ([t, list, delay]) => {
      const app = (globalThis as unknown as { app: PageApp }).app;
      for (const id of list as string[]) void app.send(t as string, id, delay as number | undefined);
    },
    [type, ids, delayMs] as const,
  );
async function until(
  page: Page,
  what: string,
  done: (s: AppState) => boolean,
  ms = 30_000,
): Promise<AppState> {
  const end = performance.now() + ms;
  for (;;) {
    const s = await state(page);
    if (done(s)) return s;
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(s)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
const range = (from: string, a: number, b: number) =>
  Array.from({ length: b - a + 1 }, (_, i) => `${from}${a + i}`);

describe('onceflow/ws/client in Chromium, across a node death', () => {
  let browser: Browser | undefined;
  let page: Page;
  let site: { url: string; close(): Promise<void> } | undefined;
  let proxy: MovingProxy | undefined;
  const nodes: GatewayProcess[] = [];

  beforeAll(async () => {
    if (!CHROMIUM) throw new Error('no chromium at /usr/bin/chromium: install it (apt-get install chromium)');
    // 3 s: a handler here takes a few ms (bet-6 holds 1.5 s); a message whose node died mid-handler
    // waits that long for its re-send to run.
    const config = { redisUrl: REDIS_URL, prefix, lease: '3s', anyOrigin: true };
    nodes.push(...(await Promise.all([GatewayProcess.start(config), GatewayProcess.start(config)])));
    proxy = await startMovingProxy(nodes[0]?.port as number);
    site = await servePage({
      '/': { type: 'text/html', body: HTML },
      '/client.js': { type: 'text/javascript', body: await bundleClient() },
      '/app.js': { type: 'text/javascript', body: APP },
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1000, height: 900 } });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await site?.close();
    await proxy?.close();
    await Promise.all(nodes.map((n) => n.stop()));
    await cleanupPrefix(redis, prefix);
    redis.disconnect();
  }, 60_000);

  it('sends and receives through node A, resumes on node B after A is killed', async () => {
    const [a, b] = nodes as [GatewayProcess, GatewayProcess];
    const publisher = createPublisher({ store });
    const published: { offset: number; n: number }[] = [];
    const publish = async (n: number) => {
      const at = await publisher.publish(USER, 'pub', { n }, { id: `pub.${n}` });
      published.push({ offset: at.offset, n });
    };
    await page.goto(`${site?.url}?ws=${encodeURIComponent(`ws://127.0.0.1:${proxy?.port}/`)}`);
    await until(page, 'the first welcome', (s) => s.welcomes.length === 1);

    // Through node A.
    await send(page, 'bet.place', range('bet-', 1, 5));
    await send(page, 'chat.echo', ['echo-1']);
    for (let n = 1; n <= 5; n++) await publish(n);
    await until(page, 'phase A', (s) => s.outcomes.length === 6 && s.received.length === 6);

    // Node A dies while bet-6's handler runs (after its run record, before its ledger apply) and
    // bet-7..10 wait behind it; more are sent while A is gone; new connections then go to B.
    const session = await page.evaluate(
      () => (globalThis as unknown as { app: { client: { session: string } } }).app.client.session,
    );
    const logKey = `${prefix}t:log:${session}`;
    await send(page, 'bet.place', ['bet-6'], 1_500);
    await send(page, 'bet.place', range('bet-', 7, 10));
    const end = performance.now() + 20_000;
    while (!(await redis.lrange(logKey, 0, -1)).some((l) => l.includes(':bet-6:')) && performance.now() < end)
      await new Promise((resolve) => setTimeout(resolve, 10));
    await a.kill();
    await send(page, 'bet.place', range('bet-', 11, 15));
    await send(page, 'chat.echo', ['echo-2']);
    for (let n = 6; n <= 8; n++) await publish(n);
    // A moment in which reconnects still reach the dead node's port and fail, as behind a
    // balancer that has not yet noticed.
    await new Promise((resolve) => setTimeout(resolve, 300));
    if (proxy) proxy.target = b.port;
    for (let n = 9; n <= 10; n++) await publish(n);
    const s = await until(page, 'phase B', (x) => x.outcomes.length === 17 && x.received.length === 12);

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    console.log(`ws-browser-gateway: screenshot at ${SCREENSHOT}`);

    expect(s.failures).toEqual([]);
    // Every message one outcome, seqs 1..17 each once; all handled.
    expect(s.outcomes.map((o) => o.seq).sort((x, y) => x - y)).toEqual(
      Array.from({ length: 17 }, (_, i) => i + 1),
    );
    expect(s.outcomes.every((o) => o.outcome === 'handled')).toBe(true);
    // The stream: offsets 1..12 once each, in order; the publishes where they were appended.
    expect(s.received.map((m) => m.offset)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    for (const { offset, n } of published)
      expect(s.received[offset - 1]).toMatchObject({ type: 'pub', body: { n } });
    expect(
      s.received
        .filter((m) => m.type === 'chat.echo')
        .map((m) => (m.body as { id: string }).id)
        .sort(),
    ).toEqual(['echo-1', 'echo-2']);
    // The reconnect continued the session and recovered the stream.
    expect(s.welcomes.length).toBeGreaterThanOrEqual(2);
    expect(s.welcomes.slice(1).every((w) => w.continued && w.recovered)).toBe(true);

    // Exactly once in the store: each bet booked once; a second run only after a run on node A.
    const ledger = createLedger({ store, capacity: 64 });
    const journal = await ledger.journal({ owner: USER, limit: 100 });
    expect(journal.map((e) => e.signature.split(':').at(-1)).sort()).toEqual(range('bet-', 1, 15).sort());
    const runs = await redis.hgetall(`${prefix}t:runs`);
    const log = await redis.lrange(logKey, 0, -1);
    // bet-6 ran on A (killed before its effect) and again on B: the ledger booked it once.
    expect(log.filter((l) => l.includes(':bet-6:')).length).toBe(2);
    for (const o of s.outcomes) {
      const lines = log.filter((l) => l.split(':')[1] === o.id);
      expect(Number(runs[`${session}:${o.id}`]), o.id).toBe(lines.length);
      for (const line of lines.slice(0, -1))
        expect(a.killed.has(Number(line.split(':')[2])), line).toBe(true);
    }
    await page.evaluate(() =>
      (globalThis as unknown as { app: { client: { close(): Promise<void> } } }).app.client.close(),
    );
  }, 120_000);
});
