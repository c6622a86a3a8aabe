// Bare limiters, not products: what a take costs with nothing around the algorithm (no
// validation, no costs, no clock-step handling, no multi-limit, no sweep of expired keys). Each
// answers the same decision object as onceflow's take (a verdict, a list of one, the decision)
// through Promise.resolve, so they show what the limiter targets ask of any implementation on
// this machine. Used by bench/limiter.bench.mjs (the floor rows) and by
// scripts/limiter-memory-ab.mjs --floors.

function decision(allowed, limit, remaining, resetAt, retryAfterMs, windowMs, now) {
  const verdict = { allowed, remaining, resetAt, retryAfterMs, id: 'bare', limit, windowMs };
  return Promise.resolve({
    allowed,
    limit,
    remaining,
    resetAt,
    retryAfterMs,
    reason: allowed ? 'allowed' : 'limited',
    bound: 'bare',
    at: now,
    limits: [verdict],
  });
}

// What every bare limiter holds: its limit, its window, and its state per key.
class Bare {
  constructor(limit, windowMs) {
    this.limit = limit;
    this.windowMs = windowMs;
    this.byKey = new Map();
  }
}

// A fixed window's take on its state `w` ({ start, count }) at `now`.
function fixedWindowTake(w, now, limit, windowMs) {
  const start = now - (now % windowMs);
  const end = start + windowMs;
  if (w.start !== start) {
    w.start = start;
    w.count = 0;
  }
  const allowed = w.count < limit;
  if (allowed) w.count++;
  return decision(allowed, limit, limit - w.count, end, allowed ? 0 : end - now, windowMs, now);
}

/** A fixed window: a Map of { start, count } per key. */
export class BareFixedWindow extends Bare {
  take(key) {
    let w = this.byKey.get(key);
    if (w === undefined) this.byKey.set(key, (w = { start: -1, count: 0 }));
    return fixedWindowTake(w, Date.now(), this.limit, this.windowMs);
  }
}

/**
 * The same fixed window with a store's layout: the limiter's Map of per-key calls, each pointing
 * at its entry in the store's Map of entries by store key, the entry holding the state and its
 * expiry (onceflow's memory limiter reaches a key's state this way, behind the store contract).
 */
export class BareStoreShapedWindow extends Bare {
  #entries = new Map();
  take(key) {
    let call = this.byKey.get(key);
    if (call === undefined) {
      this.byKey.set(key, (call = { key: `{default:${key}}:default:f1000`, handle: undefined }));
    }
    let entry = call.handle;
    if (entry === undefined) {
      entry = { state: { start: -1, count: 0 }, expiresAt: 0 };
      this.#entries.set(call.key, entry);
      call.handle = entry;
    }
    const taken = fixedWindowTake(entry.state, Date.now(), this.limit, this.windowMs);
    entry.expiresAt = entry.state.start + this.windowMs;
    return taken;
  }
}

/**
 * A sliding log of unit costs: a Map of { times, head } per key, the dead prefix dropped once it
 * is half the array.
 */
export class BareSlidingLog extends Bare {
  take(key) {
    const now = Date.now();
    const windowMs = this.windowMs;
    let log = this.byKey.get(key);
    if (log === undefined) this.byKey.set(key, (log = { times: [], head: 0 }));
    const times = log.times;
    let head = log.head;
    while (head < times.length && times[head] <= now - windowMs) head++;
    if (head > 32 && head * 2 >= times.length) {
      times.splice(0, head);
      head = 0;
    }
    log.head = head;
    const allowed = times.length - head < this.limit;
    if (allowed) times.push(now);
    const remaining = this.limit - (times.length - head);
    const resetAt = times.length > head ? times[times.length - 1] + windowMs : now;
    const retryAfterMs = allowed ? 0 : times[head] + windowMs - now;
    return decision(allowed, this.limit, remaining, resetAt, retryAfterMs, windowMs, now);
  }
}

/**
 * A sliding log of unit costs as a ring of the last `limit` admission times: a request passes iff
 * fewer than `limit` were admitted or the oldest of the last `limit` has left the window (O(1), no
 * scan, no array growth past `limit`). Its `remaining` is not exact: a floor, not a limiter.
 */
export class BareRingLog extends Bare {
  take(key) {
    const now = Date.now();
    const L = this.limit;
    let log = this.byKey.get(key);
    if (log === undefined) this.byKey.set(key, (log = { times: [], next: 0 }));
    const times = log.times;
    const full = times.length === L;
    const oldest = full ? times[log.next] : times[0];
    const allowed = !full || oldest <= now - this.windowMs;
    if (allowed && full) {
      times[log.next] = now;
      log.next = log.next + 1 === L ? 0 : log.next + 1;
    } else if (allowed) times.push(now);
    const remaining = full ? 0 : L - times.length;
    return decision(
      allowed,
      L,
      remaining,
      now + this.windowMs,
      allowed ? 0 : oldest + this.windowMs - now,
      this.windowMs,
      now,
    );
  }
}
