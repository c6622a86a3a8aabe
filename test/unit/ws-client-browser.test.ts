// onceflow/ws/client in a real browser: bundled by Vite as a browser script (a Node builtin or
// the `ws` package anywhere in it would fail the bundle or the page), run in headless Chromium
// (playwright-core with the system's chromium, never a downloaded browser) on the browser's own
// WebSocket and crypto, against the protocol server: send and ack, messages, a dropped
// connection resumed.
import { existsSync } from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleClient } from '../support/ws-browser.js';
import { FakeServer, until } from '../support/ws-fake-server.js';

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));

describe('onceflow/ws/client in headless Chromium', () => {
  let browser: Browser | undefined;
  let page: Page;
  let server: FakeServer;

  beforeAll(async () => {
    if (!CHROMIUM) throw new Error('no chromium at /usr/bin/chromium: install it (apt-get install chromium)');
    const code = await bundleClient();
    server = await FakeServer.start();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await browser.newPage();
    await page.addScriptTag({ content: code });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('sends, receives, and resumes after a dropped connection, on the browser WebSocket', async () => {
    const first = await page.evaluate(async (url) => {
      const lib = (globalThis as unknown as { OnceflowClient: typeof import('../../src/ws/client/index.js') })
        .OnceflowClient;
      const offsets: number[] = [];
      const client = lib.createClient({ url, reconnect: { minMs: 10, maxMs: 50 } });
      client.on('message', (m) => offsets.push(m.offset));
      Object.assign(globalThis, { client, offsets });
      const ack = await client.send('chat.send', { text: 'hi' }, { id: 'b-1' });
      return { ack, session: client.session, hasNode: typeof (globalThis as { process?: unknown }).process };
    }, server.url);
    expect(first.ack).toEqual({ id: 'b-1', seq: 1, outcome: 'handled' });
    expect(first.session).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(first.hasNode).toBe('undefined');
    const conn = await server.welcomed(0);
    expect(conn.protocol).toBe('onceflow.v1');

    server.publish('chat.message', { n: 1 });
    server.publish('chat.message', { n: 2 });
    await until(() => conn.frames.some((f) => f.op === 'ack' && f.offset === 2), 'the browser acks offset 2');
    conn.terminate();
    const second = await server.welcomed(1);
    expect(second.hello?.resume).toEqual({ offset: 2, epoch: 'ep1' });
    server.publish('chat.message', { n: 3 });
    const offsets = await page.evaluate(async () => {
      const g = globalThis as unknown as { offsets: number[]; client: { close(): Promise<void> } };
      const end = Date.now() + 10_000;
      while (g.offsets.length < 3 && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
      await g.client.close();
      return g.offsets;
    });
    expect(offsets).toEqual([1, 2, 3]);
  });
});
