// The HTTP side of `onceflow serve` and `onceflow demo --serve`: the live status page, its data
// (`/status.json`), Prometheus's `/metrics` and `/healthz`, on a server of its own or beside the
// gateway's WebSocket upgrades on the same port.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { STATUS_PAGE } from './page.js';

/** The part of a prom-client `Registry` the status endpoints read. */
export interface StatusRegistry {
  readonly contentType: string;
  metrics(): Promise<string>;
  getMetricsAsJSON(): Promise<readonly MetricJson[]>;
}

/** One metric family as prom-client's `getMetricsAsJSON` gives it. */
export interface MetricJson {
  readonly name: string;
  readonly help: string;
  readonly type: string | number;
  readonly values: readonly {
    readonly value: number;
    readonly labels: Readonly<Partial<Record<string, string | number>>>;
    readonly metricName?: string | undefined;
  }[];
}

/** What the status endpoints serve. */
export interface StatusSource {
  readonly registry: StatusRegistry;
  /** One cheap call the store must answer (a read); rejects when it fails. */
  ping(): Promise<unknown>;
  /** The store's label on the page and in `/healthz` (`memory`, `redis`, ...). */
  readonly store: string;
  /** What runs in the process (`serve`, `serve --gateway`, `demo`), shown on the page. */
  readonly title: string;
}

// A store that takes longer than this to answer one read is reported down: a healthy Redis answers
// in about a millisecond, and a probe (Kubernetes' default timeoutSeconds is 1) waits no longer.
const HEALTH_TIMEOUT_MS = 1000;

/**
 * The status endpoints as a request listener: `/`, `/status.json`, `/metrics`, `/healthz`; anything
 * else 404, and any method but GET and HEAD 405.
 */
export function statusHandler(source: StatusSource): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    void respond(source, req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`internal error: ${(err as Error)?.message ?? String(err)}\n`);
    });
  };
}

async function respond(source: StatusSource, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://localhost').pathname;
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD' }).end();
    return;
  }
  if (path === '/' || path === '/index.html') {
    send(res, 200, 'text/html; charset=utf-8', STATUS_PAGE);
  } else if (path === '/favicon.ico') {
    // Browsers ask for it; a 404 would be a console error on every page load.
    res.writeHead(204).end();
  } else if (path === '/metrics') {
    send(res, 200, source.registry.contentType, await source.registry.metrics());
  } else if (path === '/status.json') {
    const metrics = await source.registry.getMetricsAsJSON();
    const body = {
      title: source.title,
      store: source.store,
      time: Date.now(),
      metrics: metrics.map((m) => ({
        name: m.name,
        help: m.help,
        type: String(m.type),
        values: m.values.map((v) => ({
          ...(v.metricName === undefined ? {} : { metricName: v.metricName }),
          labels: v.labels,
          value: v.value,
        })),
      })),
    };
    send(res, 200, 'application/json; charset=utf-8', JSON.stringify(body));
  } else if (path === '/healthz') {
    const health = await checkHealth(source);
    send(res, health.ok ? 200 : 503, 'application/json; charset=utf-8', JSON.stringify(health));
  } else {
    send(res, 404, 'text/plain; charset=utf-8', 'not found\n');
  }
}

/** What `/healthz` answers. */
export interface Health {
  readonly ok: boolean;
  readonly store: string;
  /** How long the store took to answer, in ms (the timeout when it did not). */
  readonly latencyMs: number;
  readonly error?: string;
}

/** Pings the store once, bounded by {@link HEALTH_TIMEOUT_MS}. */
export async function checkHealth(source: Pick<StatusSource, 'ping' | 'store'>): Promise<Health> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no answer within ${HEALTH_TIMEOUT_MS} ms`)),
      HEALTH_TIMEOUT_MS,
    );
  });
  try {
    await Promise.race([source.ping(), timeout]);
    return { ok: true, store: source.store, latencyMs: elapsed(started) };
  } catch (err) {
    return {
      ok: false,
      store: source.store,
      latencyMs: elapsed(started),
      error: err instanceof Error ? err.message : String(err),
    };
  } finally {
    clearTimeout(timer);
  }
}

const elapsed = (since: number): number => Math.round((performance.now() - since) * 1000) / 1000;

function send(res: ServerResponse, status: number, type: string, body: string): void {
  // The page polls: a cached answer would freeze it.
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}
