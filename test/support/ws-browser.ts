// What the browser test of the gateway needs around Chromium: the client bundled by Vite as a
// browser script, a page server, and a TCP proxy whose upstream moves (a load balancer sending
// new connections to another node once one died).
import { createServer as createHttpServer, type Server } from 'node:http';
import { connect, createServer, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';

const ENTRY = fileURLToPath(new URL('../../src/ws/client/index.ts', import.meta.url));

/** onceflow/ws/client as one IIFE script defining `globalThis.OnceflowClient`. */
export async function bundleClient(): Promise<string> {
  const result = await build({
    configFile: false,
    logLevel: 'silent',
    build: {
      write: false,
      minify: false,
      lib: { entry: ENTRY, formats: ['iife'], name: 'OnceflowClient' },
    },
  });
  const outputs = Array.isArray(result) ? result : [result];
  const chunk = outputs.flatMap((o) => ('output' in o ? o.output : [])).find((c) => c.type === 'chunk');
  if (!chunk || chunk.type !== 'chunk') throw new Error('vite produced no chunk');
  return chunk.code;
}

/** An HTTP server of `files` (path -> content type and body), on a free port of 127.0.0.1. */
export async function servePage(
  files: Record<string, { type: string; body: string }>,
): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createHttpServer((req, res) => {
    const file = files[new URL(req.url ?? '/', 'http://x').pathname];
    if (file === undefined) res.writeHead(404).end();
    else res.writeHead(200, { 'content-type': `${file.type}; charset=utf-8` }).end(file.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A TCP proxy to `target`; a connection's upstream closing closes it, as a balancer's would. */
export interface MovingProxy {
  readonly port: number;
  /** Where new connections go from now on (open ones stay where they are). */
  target: number;
  close(): Promise<void>;
}

export async function startMovingProxy(target: number): Promise<MovingProxy> {
  const open = new Set<Socket>();
  const proxy: MovingProxy = {
    port: 0,
    target,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
  const server = createServer((client) => {
    const upstream = connect(proxy.target, '127.0.0.1');
    open.add(client).add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  (proxy as { port: number }).port = (server.address() as { port: number }).port;
  return proxy;
}
