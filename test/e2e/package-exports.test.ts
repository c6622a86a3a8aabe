import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, string | Record<string, string>>;
};

// What each entry point must offer, by name (a sample: enough to catch a wrong target file).
const ENTRY_POINTS: Record<string, string[]> = {
  onceflow: ['createLedger', 'createLimiter', 'ReorderBuffer', 'Snowflake', 'memoryStore'],
  'onceflow/testing': ['conformance', 'wrapStore'],
  'onceflow/redis': ['createRedisStore'],
};

describe('package exports', () => {
  beforeAll(() => {
    execFileSync(process.execPath, [join(root, 'scripts', 'ensure-built.mjs')], {
      cwd: root,
      stdio: 'inherit',
    });
  });

  it('every target file of the exports map exists after the build', () => {
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      const files = typeof target === 'string' ? [target] : Object.values(target);
      for (const file of files) expect(existsSync(join(root, file)), `${subpath} -> ${file}`).toBe(true);
    }
  });

  it('each entry point loads with import and with require (Node >= 20.19 requires ES modules)', () => {
    for (const [name, names] of Object.entries(ENTRY_POINTS)) {
      const check = `const m = MODULE; const missing = ${JSON.stringify(names)}.filter((n) => !(n in m)); if (missing.length) { console.error(missing.join()); process.exit(1); }`;
      execFileSync(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `import * as ns from ${JSON.stringify(name)}; ${check.replace('MODULE', 'ns')}`,
        ],
        { cwd: root, stdio: 'pipe' },
      );
      execFileSync(process.execPath, ['-e', check.replace('MODULE', `require(${JSON.stringify(name)})`)], {
        cwd: root,
        stdio: 'pipe',
      });
    }
  });
});
