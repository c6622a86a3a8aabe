import { afterEach, describe, expect, it, vi } from 'vitest';
import { memoryStore } from '../../index.js';
import { DEFAULT_DEMO } from './options.js';
import { runDemo } from './run.js';
import type { DemoStore } from './store.js';

// A network store stood in for: its opening is held until the test lets it finish, so an
// interrupt can arrive while it is under way (a PostgreSQL schema being migrated).
const opening = vi.hoisted(() => ({ finish: undefined as ((store: DemoStore) => void) | undefined }));
vi.mock('./store.js', async (original) => ({
  ...(await original<typeof import('./store.js')>()),
  openStore: () =>
    new Promise<DemoStore>((resolve) => {
      opening.finish = resolve;
    }),
}));

const fakeStore = () => ({
  label: 'PostgreSQL',
  store: memoryStore({ journal: { maxEntries: 0 } }),
  cleanup: vi.fn(async () => {}),
  close: vi.fn(async () => {}),
});
const config = { ...DEFAULT_DEMO, settlements: 200, players: 4, store: 'postgres://demo' };

afterEach(() => {
  vi.restoreAllMocks();
  opening.finish = undefined;
});

describe('runDemo on a network store', () => {
  it('removes what the run made and lets go of the signals once it ends', async () => {
    const before = process.listenerCount('SIGINT');
    const run = runDemo(config);
    const store = fakeStore();
    opening.finish?.(store);
    expect((await run).ok).toBe(true);
    expect(store.cleanup).toHaveBeenCalledTimes(1);
    expect(store.close).toHaveBeenCalledTimes(1);
    expect(process.listenerCount('SIGINT')).toBe(before);
  });

  it('an interrupt while the store is still opening removes what it made once open, then exits 130', async () => {
    const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never);
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const before = process.listeners('SIGINT');
    const run = runDemo(config);
    expect(opening.finish).toBeDefined();
    // The undo is in place before the store is open.
    const handler = process.listeners('SIGINT').find((l) => !before.includes(l));
    expect(handler).toBeDefined();
    handler?.('SIGINT');
    const store = fakeStore();
    opening.finish?.(store);
    await expect(run).rejects.toThrow('the run was interrupted');
    await vi.waitFor(() => expect(exit).toHaveBeenCalledWith(130));
    expect(store.cleanup).toHaveBeenCalledTimes(1);
    expect(store.close).toHaveBeenCalledTimes(1);
  });
});
