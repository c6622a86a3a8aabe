// Rate limits in one process: an API with a per-user burst limit and a per-IP exact limit,
// answering with RateLimit headers. Run: npm run build && node examples/limits.mjs
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
  return { status, bound: decision.bound, headers: rateLimitHeaders(decision) };
}

for (let i = 0; i < 7; i++) {
  const r = await handle('alice', '10.0.0.1');
  console.log(`alice #${i + 1}: ${r.status} (${r.bound})`, r.headers);
}
const bob = await handle('bob', '10.0.0.1');
console.log(`bob   #1: ${bob.status} (${bob.bound}): alice's refused requests did not use up the IP's limit`);
