// Placeholder replaced by the live-feed branch.
export interface LiveFeed {
  watch(user: string, listener: () => void): () => void;
  published(user: string): Promise<void>;
  close(): Promise<void>;
}
export function createMemoryLiveFeed(): LiveFeed {
  const users = new Map<string, Set<() => void>>();
  return {
    watch(user, listener) {
      let set = users.get(user);
      if (set === undefined) users.set(user, (set = new Set()));
      set.add(listener);
      return () => {
        set.delete(listener);
        if (set.size === 0) users.delete(user);
      };
    },
    async published(user) {
      for (const l of users.get(user) ?? []) queueMicrotask(l);
    },
    async close() {
      users.clear();
    },
  };
}
export function createRedisLiveFeed(_o: { client: unknown; prefix: string }): LiveFeed {
  return createMemoryLiveFeed();
}
