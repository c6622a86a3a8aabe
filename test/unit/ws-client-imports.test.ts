// onceflow/ws/client runs in browsers as it is: nothing it loads, however indirectly, may import a
// Node builtin (`node:fs` or a bare `fs`), the `ws` package, or any package at all, nor use
// Node-only globals. The walk follows every import from the entry, type imports included.

import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = normalize(join(dirname(fileURLToPath(import.meta.url)), '../..'));
const ENTRY = join(ROOT, 'src/ws/client/index.ts');
// Globals a browser lacks: using one would break the client there at run time.
const NODE_GLOBALS = new Set([
  'Buffer',
  'process',
  'require',
  '__dirname',
  '__filename',
  'setImmediate',
  'global',
]);

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
      specifiers.push(node.moduleSpecifier.text);
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      specifiers.push(node.argument.literal.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
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
    for (const g of globals) problems.push(`${from} uses the Node global ${g}`);
    for (const spec of specifiers) {
      if (!spec.startsWith('./') && !spec.startsWith('../')) {
        const builtin = spec.startsWith('node:') || builtinModules.includes(spec.split('/')[0] as string);
        problems.push(
          `${from} imports ${spec}${builtin ? ' (a Node builtin)' : spec === 'ws' ? ' (the ws package)' : ' (a package)'}`,
        );
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
