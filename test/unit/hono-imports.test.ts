// onceflow/hono runs where Hono runs (Node, Bun, Deno, Cloudflare Workers): what it loads at run
// time, however indirectly, may import no Node builtin (`node:crypto` or a bare `crypto`) and no
// package but `hono`, nor use a Node-only global. Type-only imports are erased by the compiler
// and load nothing, so they are not followed (the idempotency a user passes in is their choice of
// store and runtime; see docs/hono.md).
import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = normalize(join(dirname(fileURLToPath(import.meta.url)), '../..'));
const ENTRY = join(ROOT, 'src/hono/index.ts');
const NODE_GLOBALS = new Set([
  'Buffer',
  'process',
  'require',
  '__dirname',
  '__filename',
  'setImmediate',
  'global',
]);
// Node globals the graph may hold, each on a path named here. core/limits.ts: `utf8Bytes`
// (Buffer.byteLength) measures stored strings for the stores; onceflow/hono reads only the
// `LIMITS` table from it. http/idempotency-key.ts: a failure to record a response is reported
// through `process.emitWarning` only where globalThis has a `process`, else `console.error`.
const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  'src/core/limits.ts': ['Buffer'],
  'src/http/idempotency-key.ts': ['process'],
};

const typeOnly = (node: ts.ImportDeclaration | ts.ExportDeclaration): boolean =>
  ts.isImportDeclaration(node)
    ? node.importClause?.isTypeOnly === true ||
      (node.importClause !== undefined &&
        node.importClause.name === undefined &&
        node.importClause.namedBindings !== undefined &&
        ts.isNamedImports(node.importClause.namedBindings) &&
        node.importClause.namedBindings.elements.length > 0 &&
        node.importClause.namedBindings.elements.every((e) => e.isTypeOnly))
    : node.isTypeOnly ||
      (node.exportClause !== undefined &&
        ts.isNamedExports(node.exportClause) &&
        node.exportClause.elements.length > 0 &&
        node.exportClause.elements.every((e) => e.isTypeOnly));

function scan(file: string): { specifiers: string[]; globals: string[] } {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const specifiers: string[] = [];
  const globals: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier !== undefined &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      if (!typeOnly(node)) specifiers.push(node.moduleSpecifier.text);
      return;
    }
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      specifiers.push(arg && ts.isStringLiteral(arg) ? arg.text : '<computed import()>');
    } else if (
      ts.isIdentifier(node) &&
      NODE_GLOBALS.has(node.text) &&
      !(ts.isPropertyAccessExpression(node.parent) && node.parent.name === node) &&
      !ts.isPropertyAssignment(node.parent)
    ) {
      globals.push(node.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return { specifiers, globals };
}

function walk(entry: string): { files: string[]; problems: string[] } {
  const seen = new Set([entry]);
  const queue = [entry];
  const problems: string[] = [];
  for (let file = queue.pop(); file !== undefined; file = queue.pop()) {
    const from = relative(ROOT, file);
    const { specifiers, globals } = scan(file);
    for (const g of new Set(globals))
      if (!ALLOWED[from]?.includes(g)) problems.push(`${from} uses the Node global ${g}`);
    for (const spec of specifiers) {
      if (!spec.startsWith('./') && !spec.startsWith('../')) {
        if (spec === 'hono' || spec.startsWith('hono/')) continue;
        const builtin = spec.startsWith('node:') || builtinModules.includes(spec.split('/')[0] as string);
        problems.push(`${from} imports ${spec}${builtin ? ' (a Node builtin)' : ' (a package)'}`);
        continue;
      }
      const target = normalize(join(dirname(file), spec.replace(/\.js$/, '.ts')));
      if (!seen.has(target)) {
        seen.add(target);
        queue.push(target);
      }
    }
  }
  return { files: [...seen].map((f) => relative(ROOT, f)).sort(), problems };
}

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
