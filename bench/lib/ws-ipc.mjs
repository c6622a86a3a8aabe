// Child processes of the ws-gateway suite: started with `fork`, asked one thing at a time.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const here = (name) => fileURLToPath(new URL(`./${name}`, import.meta.url));

/** Sends `msg` to `child`; resolves to its answer, rejects on its error or its death. */
export function ask(child, msg) {
  return new Promise((resolve, reject) => {
    const onExit = (code, signal) => {
      child.off('message', onMessage);
      reject(new Error(`child exited (${code ?? signal}) before answering ${msg.type}`));
    };
    const onMessage = (reply) => {
      child.off('exit', onExit);
      if (reply.type === 'done') resolve(reply);
      else reject(new Error(`child: ${reply.message}`));
    };
    child.once('message', onMessage);
    child.once('exit', onExit);
    child.send(msg);
  });
}

/**
 * A server process (ws-node.mjs) of `kind`, started; resolves to { child, port, url }. With
 * BENCH_WS_PROF=<dir> in the environment, gateway processes write a CPU profile there on exit.
 */
export async function startNode(options) {
  const prof = process.env.BENCH_WS_PROF;
  const execArgv = ['--expose-gc'];
  if (prof && options.kind === 'gateway') execArgv.push('--cpu-prof', `--cpu-prof-dir=${prof}`);
  const child = fork(here('ws-node.mjs'), [], { stdio: 'inherit', execArgv });
  const { port } = await ask(child, { type: 'start', ...options });
  return { child, port, url: `ws://127.0.0.1:${port}/` };
}

/** Closes a server process and waits for it to exit (so a CPU profile is written). */
export async function stopNode(node) {
  if (node.child.exitCode !== null || node.child.signalCode !== null) return;
  const exited = new Promise((resolve) => node.child.once('exit', resolve));
  await ask(node.child, { type: 'close' });
  await exited;
}

/** A load generator process (ws-load.mjs). */
export function startLoad() {
  return fork(here('ws-load.mjs'), [], { stdio: 'inherit' });
}

/** Ends a load generator process. */
export async function stopLoad(child) {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await ask(child, { type: 'exit' });
  await exited;
}
