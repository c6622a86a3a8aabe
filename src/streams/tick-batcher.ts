/**
 * Gathers the calls made in one turn of the event loop and sends them as batches of at most `max`
 * (one script call each, sent at once): many handlers that finish together cost one round trip,
 * not one each. Each call's promise settles with its own reply, or with its batch's failure.
 */
export function createTickBatcher<I, R>(
  max: number,
  send: (items: I[]) => Promise<R[]>,
): (item: I) => Promise<R> {
  let queue: { item: I; resolve: (r: R) => void; reject: (e: unknown) => void }[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    const all = queue;
    queue = [];
    for (let at = 0; at < all.length; at += max) {
      const batch = all.slice(at, at + max);
      send(batch.map((b) => b.item)).then(
        (replies) => {
          for (let i = 0; i < batch.length; i++) batch[i]?.resolve(replies[i] as R);
        },
        (err: unknown) => {
          for (const b of batch) b.reject(err);
        },
      );
    }
  };
  return (item) =>
    new Promise<R>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    });
}
