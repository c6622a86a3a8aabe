import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const examples = readdirSync(join(root, 'examples')).filter((f) => f.endsWith('.mjs'));

describe('examples/ run against the build and exit 0', () => {
  it('has examples', () => {
    expect(examples.length).toBeGreaterThan(0);
  });
  for (const file of examples) {
    it(file, async () => {
      const env = { ...process.env, REDIS_URL: inject('redisUrl'), DATABASE_URL: inject('postgresUrl') };
      // A failed assertion inside an example makes execFile reject with its output.
      const { stdout } = await run(process.execPath, [join(root, 'examples', file)], { cwd: root, env });
      expect(stdout.length).toBeGreaterThan(0);
    });
  }
});
