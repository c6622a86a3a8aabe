// Listening for the status endpoints: a port in use or refused is said in one line (exit 1), not a
// stack.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { DemoFailure } from '../failure.js';

/** A listening HTTP server and how to stop it. */
export interface Listening {
  readonly server: Server;
  /** The port it listens on (the one picked, for port 0). */
  readonly port: number;
  readonly host: string;
  /** The status page's address, as printed. */
  readonly url: string;
  close(): Promise<void>;
}

/** An HTTP server of `handler` (none yet: a gateway attaches first and takes the listener). */
export function createStatusServer(handler?: (req: IncomingMessage, res: ServerResponse) => void): Server {
  return handler === undefined ? createServer() : createServer(handler);
}

/**
 * Listens on `host:port`; rejects with a one-line {@link DemoFailure} when the port is in use, not
 * allowed, or the host is not an interface of this machine.
 */
export async function listen(server: Server, port: number, host: string): Promise<Listening> {
  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      reject(listenFailure(err, port, host));
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
  const bound = (server.address() as { port: number }).port;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    server,
    port: bound,
    host,
    url: `http://${shown}:${bound}/`,
    close: () =>
      new Promise<void>((resolve) => {
        // The page's polls keep connections alive; a stop must not wait out their idle timeout.
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function listenFailure(err: NodeJS.ErrnoException, port: number, host: string): Error {
  const where = `${host}:${port}`;
  if (err.code === 'EADDRINUSE')
    return new DemoFailure(
      `port ${port} on ${host} is in use: stop what listens there or pick another --port`,
      {
        cause: err,
      },
    );
  if (err.code === 'EACCES')
    return new DemoFailure(`not allowed to listen on ${where} (ports below 1024 need privileges)`, {
      cause: err,
    });
  if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND')
    return new DemoFailure(`cannot listen on ${where}: --host ${host} is not an address of this machine`, {
      cause: err,
    });
  return new DemoFailure(`cannot listen on ${where}: ${err.message}`, { cause: err });
}
