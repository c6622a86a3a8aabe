// The status page of `onceflow demo --serve`: up before the run, fed by the live play of its log,
// and kept up a while after the report so the last numbers can be read.
import { memoryStore } from '../../store/memory/memory-store.js';
import type { DemoServe } from '../demo/options.js';
import type { DemoConfig } from '../demo/run.js';
import { playLive } from './demo-live.js';
import { attachMetrics } from './metrics-source.js';
import { statusHandler } from './status-handler.js';
import { createStatusServer, listen } from './status-server.js';

/** A running demo status page. */
export interface DemoStatusPage {
  readonly url: string;
  /** Plays the log live on the page (about 20 s). */
  play(config: DemoConfig): Promise<void>;
  /** Keeps the page up for the configured time or until SIGINT/SIGTERM, then stops it. */
  lingerAndClose(): Promise<void>;
}

/** Starts the page on `127.0.0.1:serve.port`; a port in use rejects with a one-line failure. */
export async function startDemoStatusPage(
  serve: DemoServe,
  log: NodeJS.WritableStream,
  playMs?: number,
): Promise<DemoStatusPage> {
  const metrics = await attachMetrics('onceflow demo --serve');
  const probe = memoryStore();
  const listening = await listen(
    createStatusServer(
      statusHandler({
        registry: metrics.registry,
        ping: () => probe.ledgerBalances('onceflow-healthz', 'healthz'),
        store: 'memory',
        title: 'onceflow demo --serve',
      }),
    ),
    serve.port,
    '127.0.0.1',
  );
  log.write(`onceflow demo: status page on ${listening.url} (/metrics, /healthz)\n`);
  const stop = new AbortController();
  return {
    url: listening.url,
    play: (config) => playLive(config, metrics, playMs, stop.signal),
    async lingerAndClose() {
      if (serve.lingerMs > 0) {
        log.write(`onceflow demo: the status page stays up ${serve.lingerMs / 1000} s (Ctrl-C to stop)\n`);
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            process.off('SIGINT', done);
            process.off('SIGTERM', done);
            resolve();
          };
          const timer = setTimeout(done, serve.lingerMs);
          process.once('SIGINT', done);
          process.once('SIGTERM', done);
        });
      }
      stop.abort();
      await listening.close();
    },
  };
}
