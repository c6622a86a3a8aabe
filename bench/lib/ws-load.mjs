// The load generator of the ws-gateway suite, started with `fork`: it holds the clients, so the
// server process under test shares no event loop with them. Messages: { type: 'open', kind
// ('protocol' | 'socketio'), url, clients, tag }, { type: 'run', count } (each client sends `count`
// messages; answers { ops, cpuUs }), { type: 'close' } (closes the clients), { type: 'exit' }.
// Each is answered { type: 'done', ... } or { type: 'error', message }.
import { openClients } from './ws-clients.mjs';

let clients = [];

async function handle(msg) {
  switch (msg.type) {
    case 'open':
      clients = await openClients(msg.kind, msg.url, msg.clients, msg.tag);
      return {};
    case 'run': {
      const c0 = process.cpuUsage();
      await Promise.all(clients.map((c) => c.run(msg.count)));
      const cpu = process.cpuUsage(c0);
      return { ops: clients.length * msg.count, cpuUs: cpu.user + cpu.system };
    }
    case 'close':
      for (const c of clients) c.close();
      clients = [];
      return {};
    case 'exit':
      return {};
    default:
      throw new Error(`unknown message ${msg.type}`);
  }
}

process.on('message', (msg) => {
  handle(msg).then(
    (reply) => {
      process.send({ type: 'done', ...reply });
      if (msg.type === 'exit') process.disconnect();
    },
    (err) => process.send({ type: 'error', message: err?.stack ?? String(err) }),
  );
});
