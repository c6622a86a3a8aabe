/**
 * `take(key)` → allowed, over a rate-limiter-flexible limiter: `consume` rejects a refusal with a
 * `RateLimiterRes` (not an `Error`); an `Error` is a real failure and is rethrown.
 */
export const rlfTake = (limiter) => async (key) => {
  try {
    await limiter.consume(key);
    return true;
  } catch (e) {
    if (e instanceof Error) throw e;
    return false;
  }
};
