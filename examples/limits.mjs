// Rate limits in one process: an API with a per-user burst limit and a per-IP exact limit,
// answering with RateLimit headers. Run: npm run build && node examples/limits.mjs
import assert from 'node:assert/strict';
import { createLimiter, rateLimitHeaders } from 'onceflow';

const limiter = createLimiter({
  limits: [
    // 5 requests per second per user, at most 5 at once: GCRA (exact rate plus burst).
    { id: 'user', algorithm: 'gcra', limit: 5, window: '1s', by: 'user' },
    // 8 requests in any 1 s window per IP, exactly: the sliding log.
    { id: 'ip', algorithm: 'sliding-log', limit: 8, window: '1s', by: 'ip' },
  ],
  degraded: 'deny', // a memory store never fails; shown for completeness
});

/** What an HTTP handler would do: decide, then answer 200 or 429 with the headers. */
async function handle(user, ip) {
  const decision = await limiter.take({ user, ip });
  const status = decision.allowed ? 200 : 429;
  const ipLeft = decision.limits.find((l) => l.id === 'ip').remaining;
  return { status, bound: decision.bound, ipLeft, headers: rateLimitHeaders(decision) };
}

// Alice sends as many requests as the IP's limit: her own limit refuses those past her burst.
const alice = [];
for (let i = 0; i < 8; i++) {
  const r = await handle('alice', '10.0.0.1');
  alice.push(r);
  console.log(`alice #${i + 1}: ${r.status} (${r.bound})`, r.headers);
}
const refused = alice.filter((r) => r.status === 429);
assert.ok(refused.length > 0, 'alice goes past her burst of 5');
assert.ok(
  refused.every((r) => r.bound === 'user'),
  'her own limit refuses her, not the IP',
);

// A refused request charges no limit: the IP counted only alice's admitted requests.
const bob = await handle('bob', '10.0.0.1');
assert.equal(bob.status, 200);
assert.equal(bob.ipLeft, 8 - (alice.length - refused.length) - 1);
console.log(`bob   #1: ${bob.status} (${bob.bound}): alice's refused requests did not use up the IP's limit`);
