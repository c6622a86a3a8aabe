// Every test file runs in exactly one Vitest project: a file no project includes would never run,
// one two projects include would run twice (and start the servers of both).
import { readdirSync } from 'node:fs';
import { join, matchesGlob, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { projects } from '../../vitest.config.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

function testFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) =>
      relative(root, join(root, dir, f))
        .split('\\')
        .join('/'),
    );
}

const matches = (file: string, globs: readonly string[]) => globs.some((g) => matchesGlob(file, g));

describe('the Vitest projects', () => {
  it('each test file of src/ and test/ is in exactly one project', () => {
    const files = [...testFiles('src'), ...testFiles('test')];
    expect(files.length).toBeGreaterThan(100);
    const where = files.map((file) => ({
      file,
      in: Object.entries(projects)
        .filter(([, p]) => matches(file, p.include) && !matches(file, p.exclude))
        .map(([name]) => name),
    }));
    expect(where.filter((w) => w.in.length !== 1)).toEqual([]);
  });
});
