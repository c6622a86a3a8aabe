// An HTTP API whose POST /charges is idempotent by its Idempotency-Key header: clients that time
// out and retry, or send the same request twice at once, are charged once per key.
// Run: npm run build && node examples/idempotent-http.mjs
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { createIdempotency, isOnceflowError } from 'onceflow';

// lease: longer than a charge takes by far; ttl: how long a client may retry (Stripe keeps keys 24 h).
const idem = createIdempotency({ name: 'charges', lease: '10s', ttl: '24h' });
const effects = new Map(); // key -> how many times the charge really ran
let charges = 0;

const server = createServer(async (req, res) => {
  const body = JSON.parse(await text(req));
  const key = req.headers['idempotency-key'];
  if (typeof key !== 'string') return send(res, 400, { error: 'Idempotency-Key header required' });
  try {
    // wait: a duplicate sent while the first runs waits for its result (up to 2 s) instead of a 409.
    const r = await idem.run(
      { key, payload: body },
      async () => {
        effects.set(key, (effects.get(key) ?? 0) + 1);
        const id = `ch_${++charges}`;
        await new Promise((resolve) => setTimeout(resolve, 50)); // the payment provider's call
        return { id, amount: body.amount };
      },
      { wait: '2s' },
    );
    switch (r.outcome) {
      case 'executed':
        return send(res, 201, r.value);
      case 'replayed':
        return send(res, 201, r.value, { 'idempotent-replayed': 'true' });
      case 'in-progress':
        return send(
          res,
          409,
          { error: 'in progress' },
          { 'retry-after': String(Math.ceil(r.retryAfterMs / 1000)) },
        );
      case 'mismatch':
        return send(res, 422, { error: 'Idempotency-Key reused with another body' });
    }
  } catch (err) {
    // A bad key (empty, over LIMITS.keyBytes) is the client's fault; anything else is ours.
    return send(res, isOnceflowError(err, 'ERR_INVALID_ARGUMENT') ? 400 : 500, {
      error: String(err.message),
    });
  }
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${server.address().port}/charges`;

/** A client that retries: on a timeout (its first try gives up after 10 ms) and on a 409. */
async function charge(key, amount, timeoutMs = 10) {
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ amount }),
        signal: AbortSignal.timeout(attempt === 0 ? timeoutMs : 5_000),
      });
      if (res.status === 409 && attempt < 5) continue;
      return { status: res.status, replayed: res.headers.has('idempotent-replayed'), body: await res.json() };
    } catch (err) {
      if (err.name !== 'TimeoutError' || attempt >= 5) throw err;
    }
  }
}

// 5 keys, each sent by 3 clients at once (each timing out once and retrying): 15 requests per key or more.
const keys = ['order-1', 'order-2', 'order-3', 'order-4', 'order-5'];
const answers = await Promise.all(keys.flatMap((key, i) => [1, 2, 3].map(() => charge(key, 100 * (i + 1)))));
for (const key of keys) {
  const mine = answers.filter((_a, j) => keys[Math.floor(j / 3)] === key);
  assert.ok(mine.every((a) => a.status === 201));
  assert.equal(new Set(mine.map((a) => a.body.id)).size, 1, 'every client of a key got the same charge');
  console.log(
    `${key}: charge ran ${effects.get(key)} time(s); 3 clients got ${mine[0].body.id} (${mine.filter((a) => a.replayed).length} replayed)`,
  );
  assert.equal(effects.get(key), 1);
}

// The same key with another body: refused, nothing charged.
const reused = await charge('order-1', 999, 5_000);
assert.equal(reused.status, 422);
assert.equal(effects.get('order-1'), 1);
console.log(
  `order-1 with another amount: ${reused.status} (${reused.body.error}); the charge still ran once`,
);

server.close();

function text(req) {
  return new Promise((resolve, reject) => {
    let data = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => (data += chunk));
    req.on('end', () => resolve(data));
    req.on('error', reject);
  });
}

function send(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}
