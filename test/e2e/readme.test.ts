import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
// Inside the package, so `import ... from 'onceflow'` resolves to the build by self-reference,
// for tsc (the exports map's `types`) and for node alike.
const dir = join(root, '.readme-examples');
const out = join(dir, 'out');

/**
 * The documents whose ```ts blocks are examples a reader copies. docs/DESIGN.md is left out: it
 * is the design contract: its surface block lists names, planned entry points among them
 * (onceflow/ws, onceflow/metrics, which the package does not have), rather than code to run.
 */
const DOCUMENTS = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md') && f !== 'DESIGN.md')
    .sort()
    .map((f) => `docs/${f}`),
];

interface Block {
  /** File name of the block's module, without extension: `<document>-<n>`. */
  name: string;
  document: string;
  /** The line of the opening fence, 1-based. */
  line: number;
  code: string;
  /** ```ts no-run: typechecked, not run (it needs something a test cannot give it). */
  noRun: boolean;
}

/**
 * Every ```ts block of a Markdown text. The info string may add words after `ts`; `no-run` is
 * the only one this test reads. Each block is a module of its own and imports what it uses
 * (from 'onceflow', 'onceflow/redis', 'onceflow/testing', node: builtins or ioredis).
 */
function blocks(document: string): Block[] {
  const markdown = readFileSync(join(root, document), 'utf8');
  const stem = basename(document, '.md').toLowerCase();
  return [...markdown.matchAll(/^```ts([^\n]*)\n([\s\S]*?)^```$/gm)].map((m, i) => ({
    name: `${stem}-${i + 1}`,
    document,
    line: markdown.slice(0, m.index).split('\n').length,
    code: m[2] as string,
    noRun: (m[1] as string).trim().split(/\s+/).includes('no-run'),
  }));
}

const all = DOCUMENTS.flatMap(blocks);

describe('README and docs/ examples', () => {
  let compiled: { ok: boolean; output: string } = { ok: false, output: 'not compiled' };

  beforeAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    for (const b of all) {
      // `export {}` makes a block without imports a module too (top-level await, own scope).
      writeFileSync(join(dir, `${b.name}.ts`), `${b.code}\nexport {};\n`);
    }
    // The project's own compiler options (strict, noUncheckedIndexedAccess,
    // exactOptionalPropertyTypes, ...), emitting plain JS to run: one tsc for every block.
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        extends: '../tsconfig.json',
        compilerOptions: {
          rootDir: '.',
          outDir: 'out',
          noEmit: false,
          declaration: false,
          declarationMap: false,
          sourceMap: false,
        },
        include: ['*.ts'],
        exclude: [],
      }),
    );
    try {
      await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', dir], { cwd: root });
      compiled = { ok: true, output: '' };
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; message: string };
      compiled = { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? ''}` || e.message };
    }
  }, 120_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('every document has examples, and the README one per idea at least', () => {
    for (const d of DOCUMENTS) expect(all.filter((b) => b.document === d).length, d).toBeGreaterThan(0);
    expect(all.filter((b) => b.document === 'README.md').length).toBeGreaterThanOrEqual(3);
  });

  it('every block typechecks under the project strict settings (one tsc run)', () => {
    // Name each failing block by document and line, not by its temporary file.
    const located = compiled.output.replace(
      /^(?:\S*\/)?([\w-]+)\.ts\((\d+),(\d+)\)/gm,
      (whole, name: string, l: string) => {
        const b = all.find((x) => x.name === name);
        return b ? `${b.document}:${b.line + Number(l)} (${name}.ts:${l})` : whole;
      },
    );
    expect(located).toBe('');
    expect(compiled.ok).toBe(true);
  });

  it('no-run stays rare: at most one block in ten', () => {
    expect(all.filter((b) => b.noRun).length * 10).toBeLessThanOrEqual(all.length);
  });

  for (const b of all) {
    if (b.noRun) continue;
    const title = b.code.split('\n').find((l) => !l.startsWith('import') && l.trim() !== '') ?? '';
    it(`${b.document}:${b.line} runs: ${title.slice(0, 60)}`, async () => {
      // tsc emits a block even when another one fails to typecheck: each run says its own result.
      const env = { ...process.env, REDIS_URL: inject('redisUrl'), DATABASE_URL: inject('postgresUrl') };
      const { stderr } = await run(process.execPath, [join(out, `${b.name}.js`)], { cwd: root, env });
      expect(stderr).toBe('');
    });
  }
});

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a Markdown file's headings (outside code fences). */
function anchors(file: string): Set<string> {
  const text = readFileSync(join(root, file), 'utf8').replace(/^```[\s\S]*?^```$/gm, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1] as string)));
}

describe('README and docs/ links', () => {
  it('every relative link reaches a file, and every #anchor a heading in it', () => {
    const broken: string[] = [];
    for (const document of [...DOCUMENTS, 'BENCHMARKS.md', 'docs/DESIGN.md', 'scripts/README.md']) {
      const text = readFileSync(join(root, document), 'utf8').replace(/^```[\s\S]*?^```$/gm, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target as string)) continue; // https:, mailto:
        const [path, anchor] = (target as string).split('#') as [string, string | undefined];
        const file = path === '' ? document : normalize(join(dirname(document), path));
        if (!existsSync(join(root, file))) broken.push(`${document}: ${target} (no ${file})`);
        else if (anchor !== undefined && file.endsWith('.md') && !anchors(file).has(anchor)) {
          broken.push(`${document}: ${target} (no heading #${anchor} in ${file})`);
        }
      }
    }
    expect(broken).toEqual([]);
  });
});
