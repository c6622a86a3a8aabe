// Every options object of onceflow/postgres refuses what it does not know, before any state
// changes: an unknown key (a JavaScript caller's typo would otherwise change nothing and say
// nothing), `schema: null` (not the default schema), a timeout that is no positive duration.
// Nothing here reaches a server: the pool below fails any checkout, and none is attempted.
import { describe, expect, it } from 'vitest';
import { migrate } from './migrate.js';
import type { PgPoolLike } from './pg-like.js';
import { createPostgresStore } from './postgres-store.js';
import { withTransaction } from './transaction.js';

let checkouts = 0;
const pool = {
  connect(callback?: (err: Error | undefined, client: undefined) => void) {
    checkouts++;
    const err = new Error('no server in this test');
    if (callback) callback(err, undefined);
    else return Promise.reject(err);
  },
  query: () => Promise.reject(new Error('no server in this test')),
} as unknown as PgPoolLike;

const refused = (option: string, message: RegExp) =>
  expect.objectContaining({ code: 'ERR_INVALID_OPTION', option, message: expect.stringMatching(message) });

describe('onceflow/postgres options', () => {
  it('createPostgresStore refuses an unknown key, with a did-you-mean, and journal keys likewise', () => {
    expect(() => createPostgresStore({ pool, schemma: 'a' } as never)).toThrow(
      refused('schemma', /did you mean `schema`\?/),
    );
    expect(() => createPostgresStore({ pool, timout: '1s' } as never)).toThrow(
      refused('timout', /did you mean `timeout`\?/),
    );
    expect(() => createPostgresStore({ pool, journal: { maxEntriesPerOwnr: 3 } } as never)).toThrow(
      refused('journal.maxEntriesPerOwnr', /did you mean `maxEntriesPerOwner`\?/),
    );
    // The memory store's option keeps its own message, which says what to use instead.
    expect(() => createPostgresStore({ pool, journal: { maxEntries: 3 } } as never)).toThrow(
      refused('journal.maxEntries', /maxEntriesPerOwner/),
    );
  });

  it('migrate, withTransaction and cleanup refuse an unknown key', async () => {
    await expect(migrate({ pool, shema: 'a' } as never)).rejects.toEqual(refused('shema', /`schema`/));
    await expect(withTransaction(pool, async () => 1, { timeuot: '1s' } as never)).rejects.toEqual(
      refused('timeuot', /did you mean `timeout`\?/),
    );
    await expect(withTransaction(pool, async () => 1, null as never)).rejects.toEqual(
      refused('options', /an object/),
    );
    const store = createPostgresStore({ pool, schema: 't_options', migrate: false });
    await expect(store.cleanup({ limt: 5 } as never)).rejects.toEqual(refused('limt', /`limit`/));
    expect(checkouts).toBe(0);
  });

  it('schema: null is refused, not taken for the default schema', async () => {
    expect(() => createPostgresStore({ pool, schema: null } as never)).toThrow(
      refused('schema', /got `null`/),
    );
    await expect(migrate({ pool, schema: null } as never)).rejects.toEqual(refused('schema', /got `null`/));
    expect(checkouts).toBe(0);
  });

  it('timeout is a positive duration a timer can wait out', async () => {
    for (const timeout of [0, null, -1, 'soon', 2 ** 31]) {
      expect(() => createPostgresStore({ pool, timeout } as never), String(timeout)).toThrow(
        expect.objectContaining({ code: expect.stringMatching(/^ERR_INVALID_(OPTION|DURATION)$/) }),
      );
      await expect(migrate({ pool, timeout } as never)).rejects.toHaveProperty('code');
      await expect(withTransaction(pool, async () => 1, { timeout } as never)).rejects.toHaveProperty('code');
    }
    expect(createPostgresStore({ pool, timeout: '250ms', migrate: false }).kind).toBe('postgres');
    expect(checkouts).toBe(0);
  });
});
