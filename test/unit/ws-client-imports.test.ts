// onceflow/ws/client runs in browsers as it is: nothing it loads, however indirectly, may import a
// Node builtin (`node:fs` or a bare `fs`), the `ws` package, or any package at all, nor use
// Node-only globals. The walk follows every import from the entry, type imports included.

import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, walkImports } from '../support/import-graph.js';

const ENTRY = join(ROOT, 'src/ws/client/index.ts');
const walk = (entry: string) => walkImports(entry, { typeImports: true });

describe('onceflow/ws/client imports nothing of Node', () => {
  it('no Node builtin, no ws, no package, no Node global, in its whole import graph', () => {
    const { files, problems } = walk(ENTRY);
    expect(problems).toEqual([]);
    // The walk did reach the shared frame modules (so it follows imports out of the folder).
    expect(files).toContain('src/ws/frames.ts');
    expect(files).toContain('src/core/errors.ts');
  });

  it('the check catches what it forbids', () => {
    const { problems } = walk(join(ROOT, 'test/support/ws-fake-server.ts'));
    expect(problems.some((p) => p.includes('node:net'))).toBe(true);
    expect(problems.some((p) => p.includes('imports ws (the ws package)'))).toBe(true);
  });
});
