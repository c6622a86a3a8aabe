import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, inject, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
// Inside the package, so `import ... from 'onceflow'` resolves to the build by self-reference.
const dir = join(root, '.readme-examples');

/** Every ```ts block of the README, in order. */
function blocks(markdown: string): string[] {
  return [...markdown.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] as string);
}

describe('README examples', () => {
  const examples = blocks(readFileSync(join(root, 'README.md'), 'utf8'));
  mkdirSync(dir, { recursive: true });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('has examples to run', () => {
    expect(examples.length).toBeGreaterThanOrEqual(5);
  });

  for (const [i, code] of examples.entries()) {
    const title = code.split('\n').find((l) => l.startsWith('import') === false && l.trim() !== '') ?? '';
    it(`block ${i + 1} runs: ${title.slice(0, 60)}`, async () => {
      const file = join(dir, `block-${i + 1}.mjs`);
      writeFileSync(file, code);
      const env = { ...process.env, REDIS_URL: inject('redisUrl') };
      const { stderr } = await run(process.execPath, [file], { cwd: root, env });
      expect(stderr).toBe('');
    });
  }
});
