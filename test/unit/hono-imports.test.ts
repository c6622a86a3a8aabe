// onceflow/hono runs where Hono runs (Node, Bun, Deno, Cloudflare Workers): what it loads at run
// time, however indirectly, may import no Node builtin (`node:crypto` or a bare `crypto`) and no
// package but `hono`, nor use a Node-only global. Type-only imports are erased by the compiler
// and load nothing, so they are not followed (the idempotency a user passes in is their choice of
// store and runtime; see docs/hono.md).
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, scanImports, walkImports } from '../support/import-graph.js';

const ENTRY = join(ROOT, 'src/hono/index.ts');
// Node globals the graph may hold, each on a path named here. core/limits.ts: `utf8Bytes`
// (Buffer.byteLength) measures stored strings for the stores; onceflow/hono reads only the
// `LIMITS` table from it. core/observer.ts: `warn` (a failure to record a response, reported by
// http/idempotency-key.ts) uses `process.emitWarning` only where globalThis has a `process`, else
// `console.error`.
const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  'src/core/limits.ts': ['Buffer'],
  'src/core/observer.ts': ['process'],
};
const walk = (entry: string) =>
  walkImports(entry, {
    typeImports: false,
    packages: (spec) => spec === 'hono' || spec.startsWith('hono/'),
    globals: ALLOWED,
  });
const scan = (file: string) => scanImports(file, false);

describe('onceflow/hono loads nothing of Node', () => {
  it('no Node builtin, no package but hono, no Node global, in its run-time import graph', () => {
    const { files, problems } = walk(ENTRY);
    expect(problems).toEqual([]);
    // The walk left the folder: it reached the framework-neutral cores it wraps.
    expect(files).toContain('src/http/idempotency-key.ts');
    expect(files).toContain('src/http/rate-limit.ts');
    expect(files).toContain('src/limiter/headers.ts');
  });

  it('every allowance is still needed: a global that left its file leaves the list too', () => {
    for (const [file, names] of Object.entries(ALLOWED)) {
      expect(scan(join(ROOT, file)).globals).toEqual(expect.arrayContaining([...names]));
    }
  });

  it('the check catches what it forbids (type-only imports aside)', () => {
    // The idempotency capability hashes with node:crypto: reached by a run-time import, flagged.
    const { problems } = walk(join(ROOT, 'src/idempotency/idempotency.ts'));
    expect(problems.some((p) => p.includes('node:crypto (a Node builtin)'))).toBe(true);
    // src/http/idempotency-key.ts names it by a type import only: not followed.
    expect(walk(join(ROOT, 'src/http/idempotency-key.ts')).files).not.toContain(
      'src/idempotency/idempotency.ts',
    );
  });
});
