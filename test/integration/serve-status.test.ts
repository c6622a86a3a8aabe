// The live status page in real headless Chromium (playwright-core with the system's chromium, never
// a downloaded browser) while `onceflow demo --serve`'s live play drives traffic: the page loads
// with no console error, its numbers and lines change from one sample to the next, the onceflow
// row stays at zero doubles while a naive row climbs, and a screenshot is kept as an artifact.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_DEMO } from '../../src/cli/demo/options.js';
import { startDemoStatusPage } from '../../src/cli/status/demo-serve.js';

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
const ARTIFACTS = fileURLToPath(new URL('../../.artifacts/', import.meta.url));
// 10 s of play: the page samples each second, so the two readings below, 3 s apart, fall inside it
// with room to spare on a loaded machine.
const PLAY_MS = 10_000;

/** A tile's number as the page writes it: `7466`, `12.3k`, `1.25M`. */
function shown(text: string | undefined): number {
  const m = /^(-?[\d.]+)([kM]?)$/.exec(text ?? '');
  if (m === null) return Number.NaN;
  return Number(m[1]) * (m[2] === 'k' ? 1e3 : m[2] === 'M' ? 1e6 : 1);
}

/** Each tile's series id, number and line, as the page shows them. */
async function readTiles(page: import('playwright-core').Page) {
  return page.$$eval('.tile', (tiles) =>
    tiles.map((t) => ({
      series: (t as unknown as { dataset: { series?: string } }).dataset.series ?? '',
      value: t.querySelector('.value')?.textContent ?? '',
      path: t.querySelector('path')?.getAttribute('d') ?? '',
    })),
  );
}

describe('the status page in headless Chromium', () => {
  let browser: Browser | undefined;
  afterAll(async () => {
    await browser?.close();
  });

  it('updates in place while a run drives traffic, with no console error', async () => {
    if (!CHROMIUM) throw new Error('no chromium at /usr/bin/chromium: install it (apt-get install chromium)');
    const log: string[] = [];
    const sink = { write: (s: string) => log.push(s) } as unknown as NodeJS.WritableStream;
    const status = await startDemoStatusPage({ port: 0, lingerMs: 0 }, sink, PLAY_MS);
    const playing = status.play({ ...DEFAULT_DEMO, settlements: 20_000 });
    try {
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
      const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
      const errors: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error') errors.push(m.text());
      });
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(status.url);
      await page.waitForSelector('[data-series^="onceflow_demo_doubled"]', { timeout: 10_000 });
      await page.waitForSelector('#health.ok');
      const first = await readTiles(page);
      await page.waitForTimeout(3000);
      const second = await readTiles(page);

      const at = (tiles: typeof first, id: string) => tiles.find((t) => t.series === id);
      const onceflow = 'onceflow_demo_doubled{guard=onceflow-c4}';
      const naive = 'onceflow_demo_doubled{guard=no-dedup}';
      const applied = 'onceflow_ledger_applies_total{ledger=onceflow-c4, outcome=applied}';
      expect(at(second, onceflow)?.value).toBe('0');
      expect(shown(at(second, naive)?.value)).toBeGreaterThan(shown(at(first, naive)?.value));
      expect(shown(at(second, applied)?.value)).toBeGreaterThan(shown(at(first, applied)?.value));
      expect(at(second, naive)?.path).not.toBe(at(first, naive)?.path);
      expect(await page.$eval('#health', (e) => e.textContent)).toMatch(/store answers in [\d.]+ ms/);
      // Sections the issue names are on the page once their metrics exist.
      expect(await page.$$eval('section h2', (hs) => hs.map((h) => h.textContent))).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/Ledger outcomes/),
          expect.stringMatching(/Store calls/),
        ]),
      );
      mkdirSync(ARTIFACTS, { recursive: true });
      const shot = join(ARTIFACTS, 'status-page.png');
      await page.screenshot({ path: shot, fullPage: true });
      console.log(`status page screenshot: ${shot}`);
      expect(errors).toEqual([]);
    } finally {
      await status.lingerAndClose();
      await playing;
    }
  }, 30_000);
});
