// An Express app on a free port, for the onceflow/express tests to reach with `fetch`.
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';

export interface Listening {
  readonly url: string;
  close(): Promise<void>;
}

/** Listens on 127.0.0.1, port 0 (a free port); `close` ends its idle keep-alive connections too. */
export async function listen(app: Express): Promise<Listening> {
  const server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
