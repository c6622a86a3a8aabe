// The run-time (or whole) import graph of an entry, for the tests that keep an entry free of Node:
// onceflow/ws/client (browsers: every import, type imports included) and onceflow/hono (Web-standard
// runtimes: what runs, type-only imports being erased). Each names what it allows.
import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const ROOT = normalize(join(dirname(fileURLToPath(import.meta.url)), '../..'));

// Globals a browser or a Web-standard runtime lacks: using one breaks the code there at run time.
const NODE_GLOBALS = new Set([
  'Buffer',
  'process',
  'require',
  '__dirname',
  '__filename',
  'setImmediate',
  'global',
]);

/** What a walk follows and lets pass. */
export interface GraphRules {
  /** Follow type-only imports too (a browser bundle's type checker sees them), or skip them. */
  readonly typeImports: boolean;
  /** Package specifiers allowed (not followed). */
  readonly packages?: (spec: string) => boolean;
  /** Node globals allowed, per file (relative to the root), each with its reason at the caller. */
  readonly globals?: Readonly<Record<string, readonly string[]>>;
}

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

/** The specifiers a file imports and the Node globals it names. */
export function scanImports(file: string, typeImports: boolean): { specifiers: string[]; globals: string[] } {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const specifiers: string[] = [];
  const globals: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier !== undefined &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      if (typeImports || !typeOnly(node)) specifiers.push(node.moduleSpecifier.text);
      if (!typeImports) return;
    } else if (
      typeImports &&
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

/** Every file reached from `entry` (relative to the root), and what in them breaks `rules`. */
export function walkImports(entry: string, rules: GraphRules): { files: string[]; problems: string[] } {
  const seen = new Set([entry]);
  const queue = [entry];
  const problems: string[] = [];
  for (let file = queue.pop(); file !== undefined; file = queue.pop()) {
    const from = relative(ROOT, file);
    const { specifiers, globals } = scanImports(file, rules.typeImports);
    for (const g of new Set(globals))
      if (!rules.globals?.[from]?.includes(g)) problems.push(`${from} uses the Node global ${g}`);
    for (const spec of specifiers) {
      if (!spec.startsWith('./') && !spec.startsWith('../')) {
        if (rules.packages?.(spec) === true) continue;
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
