import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, string | Record<string, string>>;
};

// What each entry point must offer, by name (a sample: enough to catch a wrong target file).
const ENTRY_POINTS: Record<string, string[]> = {
  onceflow: ['createLedger', 'createLimiter', 'ReorderBuffer', 'Snowflake', 'memoryStore'],
  'onceflow/testing': ['conformance', 'wrapStore', 'startTcpProxy', 'startRedis', 'startCluster'],
  'onceflow/redis': ['createRedisStore'],
};

/**
 * Every module specifier a built file imports or re-exports, statically or by `import('...')`,
 * read from its syntax tree (an `import` in a comment or a string is not one).
 */
function specifiersOf(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      found.push((node.moduleSpecifier as ts.StringLiteral).text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      // A computed specifier cannot be followed: it fails the check instead of passing unseen.
      found.push(arg && ts.isStringLiteralLike(arg) ? arg.text : `<computed import() in ${file}>`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

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

  it('the core (dist/index.js) loads nothing but itself and node: builtins: zero runtime dependencies', () => {
    const dist = join(root, 'dist');
    const entry = join(dist, 'index.js');
    const seen = new Set<string>([entry]);
    const queue = [entry];
    const bare: string[] = [];
    for (let file = queue.pop(); file !== undefined; file = queue.pop()) {
      for (const spec of specifiersOf(file)) {
        if (spec.startsWith('node:')) continue;
        if (!spec.startsWith('./') && !spec.startsWith('../')) {
          bare.push(`${relative(root, file)} -> ${spec}`);
          continue;
        }
        const target = join(dirname(file), spec);
        expect(existsSync(target), `${relative(root, file)} -> ${spec}`).toBe(true);
        if (!seen.has(target)) {
          seen.add(target);
          queue.push(target);
        }
      }
    }
    expect(bare).toEqual([]);
    // The walk reached the core's modules (ledger, limiter, ordering, ...), not just the entry.
    expect(seen.size).toBeGreaterThan(20);
    // Nor the adapters and the CLI (whose packages are optional peers or the CLI's own), even
    // where they import no package themselves: the Redis store takes the caller's client.
    const adapters = [...seen]
      .map((f) => relative(dist, f))
      .filter((f) => ['cli', 'demo', 'redis', 'testing'].includes(f.split(sep)[0] as string));
    expect(adapters).toEqual([]);
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
