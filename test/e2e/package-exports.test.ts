import { execFileSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
interface PackageJson {
  exports: Record<string, string | Record<string, string>>;
  typesVersions: Record<string, Record<string, string[]>>;
  bin: Record<string, string>;
  repository?: { url?: string };
  bugs?: { url?: string };
  homepage?: string;
}
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as PackageJson;

// What each entry point must offer, by name (a sample: enough to catch a wrong target file).
const ENTRY_POINTS: Record<string, string[]> = {
  onceflow: ['createLedger', 'createLimiter', 'ReorderBuffer', 'Snowflake', 'memoryStore'],
  'onceflow/testing': ['conformance', 'wrapStore', 'startTcpProxy', 'startRedis', 'startCluster'],
  'onceflow/redis': ['createRedisStore'],
  'onceflow/postgres': ['createPostgresStore', 'migrate'],
  'onceflow/streams': ['createStreamProducer', 'createStreamConsumer', 'trimStream'],
  'onceflow/store': ['StoreError', 'ErrorCode'],
  'onceflow/ws': ['parseClientFrame', 'encodeServerFrame', 'WS_CODES'],
  'onceflow/ws/client': ['createClient', 'isWsClientError', 'WsClientError'],
  'onceflow/metrics': ['createMetrics', 'createOtelMetrics', 'METRICS'],
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
      .filter((f) =>
        ['cli', 'demo', 'metrics', 'postgres', 'redis', 'streams', 'testing', 'ws'].includes(
          f.split(sep)[0] as string,
        ),
      );
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

/**
 * A consumer of every entry point. Wrong uses must be errors, so types that resolved to `any`
 * (or not at all) cannot pass.
 */
const CONSUMER = `import { type ApplyResult, createLedger, memoryStore } from 'onceflow';
import { createRedisStore, type RedisStoreOptions } from 'onceflow/redis';
import type { LedgerApplyCommand, Store } from 'onceflow/store';
import { conformance, wrapStore } from 'onceflow/testing';

const store: Store = wrapStore(memoryStore(), {});
// 4 = 2 settlements per round (instant + final) x 2 rounds that can overlap.
const ledger = createLedger({ store, capacity: 4 });
const applied: Promise<ApplyResult> = ledger.apply({ owner: 'p1', signature: 's1', deltas: { coins: 1 } });
const prefix: RedisStoreOptions['prefix'] = 'consumer:';
const cases: number = conformance.cases.length;

export function wrongUses(): void {
  // @ts-expect-error capacity is a number
  createLedger({ capacity: 'four' });
  // @ts-expect-error a client is an ioredis client, with call()
  createRedisStore({ client: 42, prefix });
  // @ts-expect-error a store command's deltas are validated pairs
  const command: LedgerApplyCommand = { ledger: 'l', capacity: 4, horizon: true, owner: 'p1', signature: 's1', deltas: { coins: 1n } };
  void command;
}

applied.then((r) => console.log(r.outcome, cases > 0, typeof createRedisStore));
`;

/** Runs a program, failing with its output (tsc prints its errors on stdout). */
function sh(file: string, args: string[], cwd: string): string {
  try {
    return execFileSync(file, args, { cwd, encoding: 'utf8', stdio: 'pipe' });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${file} ${args.join(' ')} failed:\n${e.stdout ?? ''}${e.stderr ?? ''}` || e.message);
  }
}

describe('the packed tarball, installed into a project of its own', () => {
  // Made in beforeAll, beside the afterAll that removes it: made while the file is collected, it
  // would stay behind whenever its tests are filtered out (the hooks then do not run).
  let work = '';
  let installed = '';
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  let files: string[] = [];

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'onceflow-pack-'));
    installed = join(work, 'consumer', 'node_modules', 'onceflow');
    // Packed from a clean build of the package's own config (as `prepack` does before a publish),
    // so files a local dist/ kept from an older build cannot hide or fake anything.
    const stage = join(work, 'stage');
    mkdirSync(stage);
    for (const f of ['package.json', 'README.md', 'LICENSE', 'docs', 'examples']) {
      cpSync(join(root, f), join(stage, f), { recursive: true });
    }
    sh(
      process.execPath,
      [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', join(stage, 'dist')],
      root,
    );
    const [packed] = JSON.parse(
      sh('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], stage),
    ) as { filename: string; files: { path: string }[] }[];
    if (!packed) throw new Error('npm pack reported no tarball');
    files = packed.files.map((f) => f.path);

    const modules = join(work, 'consumer', 'node_modules');
    mkdirSync(modules, { recursive: true });
    sh('tar', ['-xzf', join(work, packed.filename), '-C', modules], work);
    renameSync(join(modules, 'package'), installed);
    // The consumer's own dev dependency: Node's types (the declarations use node: modules).
    symlinkSync(join(root, 'node_modules', '@types'), join(modules, '@types'), 'dir');

    const base = { target: 'ES2022', strict: true, types: ['node'], outDir: 'out', skipLibCheck: false };
    const projects = {
      node10: { type: 'commonjs', options: { module: 'commonjs', moduleResolution: 'node10' } },
      nodenext: { type: 'module', options: { module: 'nodenext', moduleResolution: 'nodenext' } },
    };
    for (const [name, { type, options }] of Object.entries(projects)) {
      const dir = join(work, 'consumer', name);
      mkdirSync(dir);
      writeFileSync(
        join(dir, 'package.json'),
        JSON.stringify({ name: `consumer-${name}`, private: true, type }),
      );
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({ compilerOptions: { ...base, ...options }, include: ['index.ts'] }),
      );
      writeFileSync(join(dir, 'index.ts'), CONSUMER);
    }
  }, 180_000);
  afterAll(() => {
    if (work !== '') rmSync(work, { recursive: true, force: true });
  });

  it('holds every file the exports map, typesVersions and bin point at, and the links of a published package', () => {
    const targets = [
      ...Object.values(pkg.exports).flatMap((t) => (typeof t === 'string' ? [t] : Object.values(t))),
      ...Object.values(pkg.typesVersions).flatMap((m) => Object.values(m).flat()),
      ...Object.values(pkg.bin),
    ];
    for (const target of targets) expect(files, target).toContain(posix.normalize(target));
    expect(files.some((f) => f.endsWith('.test.js') || f.startsWith('test/'))).toBe(false);
    // The docs name and link the runnable examples: they ship with them.
    for (const example of readdirSync(join(root, 'examples')).filter((f) => f.endsWith('.mjs'))) {
      expect(files, example).toContain(`examples/${example}`);
    }
    expect(pkg.repository?.url).toMatch(/github\.com\/onceflow\/onceflow/);
    expect(pkg.bugs?.url).toMatch(/github\.com\/onceflow\/onceflow\/issues/);
    expect(pkg.homepage).toMatch(/github\.com\/onceflow\/onceflow/);
  });

  it('no source map points at a file the package does not ship', () => {
    const shipped = new Set(files);
    const dangling: string[] = [];
    for (const file of files.filter((f) => f.endsWith('.js') || f.endsWith('.d.ts'))) {
      const url = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(readFileSync(join(installed, file), 'utf8'))?.[1];
      if (url === undefined) continue;
      const map = posix.join(posix.dirname(file), url);
      if (!shipped.has(map)) dangling.push(`${file} -> ${map}`);
    }
    for (const map of files.filter((f) => f.endsWith('.map'))) {
      const { sources } = JSON.parse(readFileSync(join(installed, map), 'utf8')) as { sources: string[] };
      for (const source of sources) {
        const path = posix.join(posix.dirname(map), source);
        if (!shipped.has(path)) dangling.push(`${map} -> ${path}`);
      }
    }
    expect(dangling).toEqual([]);
  });

  for (const name of ['node10', 'nodenext']) {
    it(`types of onceflow, onceflow/redis, onceflow/store and onceflow/testing resolve under moduleResolution ${name}, and the consumer runs`, () => {
      const dir = join(work, 'consumer', name);
      expect(sh(process.execPath, [tsc, '-p', dir], dir)).toBe('');
      expect(sh(process.execPath, [join(dir, 'out', 'index.js')], dir)).toBe('applied true function\n');
    });
  }
});
