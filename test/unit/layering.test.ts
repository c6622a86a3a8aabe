// Imports go one way (DESIGN §4): a file may import its own folder and the layers below it,
// never a layer above, and no import chain may come back to where it started (a file cycle) nor
// a folder chain (a folder cycle: two folders each leaning on the other cannot be read apart).
//
//   layer  folders                                       why it sits there
//   0      core                                          errors, validation, clock, durations: needed by all, needs none
//   1      windows                                       pure algorithms (signature window, reorder buffer, limiter math): no I/O, time passed in
//   2      store (store/memory inside it)                the whole Store contract, and the memory store that is its reference model
//   3      ledger, limiter, ordering, idempotency,       the capabilities a user calls: each uses the contract of store/ only,
//          signature                                      never another store or another capability's internals
//          guard                                         the penetration guard in front of a caller's lookup (core and windows only)
//   3.5    http                                          the framework-neutral HTTP parts (rate limit, Idempotency-Key) on limiter and idempotency
//   4      redis, postgres, streams, testing             adapters (optional peers) and the kit: they implement or test the contract
//          ws                                            the WebSocket gateway: an adapter on `ws` (an optional peer) and a store
//          express, fastify, hono                        the framework adapters (optional peers), glue over http
//   5      cli (the demo inside it)                      programs built on everything else, imported by nothing in the library
//   root   src/index.ts                                  the core entry: re-exports layers 0-3 (not an adapter, not cli);
//                                                        only cli may import it
//
// Every import counts, type-only ones too (`import type`, `export ... from`, `import('...')`
// types): a type import is still a dependency a reader must follow. Test files (*.test.ts) are
// left out: they sit beside their subject but may drive it through any layer above (the public
// entry, the kit, a real store).
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const LAYERS: Readonly<Record<string, number>> = {
  core: 0,
  windows: 1,
  store: 2,
  ledger: 3,
  limiter: 3,
  ordering: 3,
  idempotency: 3,
  signature: 3,
  guard: 3,
  http: 3.5,
  redis: 4,
  postgres: 4,
  streams: 4,
  testing: 4,
  ws: 4,
  metrics: 4,
  express: 4,
  fastify: 4,
  hono: 4,
  cli: 5,
};
// src/index.ts: above every library layer, below cli.
const ROOT_LAYER = 4.5;

const SRC = normalize(join(dirname(fileURLToPath(import.meta.url)), '../../src'));

interface Node {
  readonly file: string; // relative to src/, with `/`
  readonly folder: string; // '' for src/index.ts
  readonly layer: number;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(path));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

function nodeOf(absolute: string): Node {
  const file = relative(SRC, absolute).split(sep).join('/');
  const parts = file.split('/');
  if (parts.length === 1) return { file, folder: '', layer: ROOT_LAYER };
  const folder = parts[0] as string;
  const layer = LAYERS[folder];
  if (layer === undefined) throw new Error(`src/${file}: folder ${folder}/ has no layer in the table`);
  return { file, folder, layer };
}

/** Every module specifier a file names: imports, re-exports (`export * as ns` too), `import()` and `import('…')` types. */
function specifiers(absolute: string): string[] {
  const source = ts.createSourceFile(absolute, readFileSync(absolute, 'utf8'), ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier !== undefined &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      out.push(node.moduleSpecifier.text);
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      out.push(node.argument.literal.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      out.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

// The package's own name or an import map (`#…`) would reach a module by a path this walk cannot
// place in a layer: every import inside src/ is relative.
const SELF = /^(onceflow(\/|$)|#)/;

/** Every relative import of every source file, resolved to a file under src/. */
function imports(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const absolute of sourceFiles(SRC)) {
    const from = nodeOf(absolute).file;
    const targets: string[] = [];
    for (const name of specifiers(absolute)) {
      if (SELF.test(name)) throw new Error(`src/${from} imports ${name}: imports inside src/ are relative`);
      if (!name.startsWith('.')) continue;
      const target = normalize(join(dirname(absolute), name.replace(/\.js$/, '.ts')));
      targets.push(nodeOf(target).file);
    }
    graph.set(from, targets);
  }
  return graph;
}

function upward(graph: Map<string, string[]>): string[] {
  const out: string[] = [];
  for (const [from, targets] of graph) {
    const a = nodeOf(join(SRC, from));
    for (const to of targets) {
      const b = nodeOf(join(SRC, to));
      if (a.folder === b.folder) continue;
      // The root entry re-exports the core library (layers 0-3), never an adapter or a program.
      if (a.layer === ROOT_LAYER ? b.layer > 3 : b.layer > a.layer) {
        out.push(
          `src/${from} (${a.folder || 'root'}, layer ${a.layer}) imports src/${to} (${b.folder || 'root'}, layer ${b.layer})`,
        );
      }
    }
  }
  return out.sort();
}

/** Every cycle of a graph, one per strongly connected component of more than one node (Tarjan). */
function cycles(graph: Map<string, readonly string[]>): string[][] {
  let index = 0;
  const indexOf = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    indexOf.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!indexOf.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) as number, indexOf.get(w) as number));
      }
    }
    if (low.get(v) === indexOf.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(component.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!indexOf.has(v)) visit(v);
  return out.sort((a, b) => (a[0] as string).localeCompare(b[0] as string));
}

function folderGraph(graph: Map<string, string[]>): Map<string, string[]> {
  const folders = new Map<string, Set<string>>();
  for (const [from, targets] of graph) {
    const a = nodeOf(join(SRC, from)).folder || 'index.ts';
    const set = folders.get(a) ?? new Set<string>();
    folders.set(a, set);
    for (const to of targets) {
      const b = nodeOf(join(SRC, to)).folder || 'index.ts';
      if (b !== a) set.add(b);
    }
  }
  return new Map([...folders].map(([k, v]) => [k, [...v]]));
}

describe('layering (DESIGN §4)', () => {
  const graph = imports();

  it('every folder of src/ has a layer, and src/ has files to check', () => {
    expect(graph.size).toBeGreaterThan(100);
  });

  it('no file imports a layer above its own', () => {
    expect(upward(graph)).toEqual([]);
  });

  it('no file-level import cycle', () => {
    expect(cycles(graph).map((c) => c.join(' <-> '))).toEqual([]);
  });

  it('no folder-level import cycle', () => {
    expect(cycles(folderGraph(graph)).map((c) => c.join(' <-> '))).toEqual([]);
  });

  it('finds an upward edge and a cycle when there is one (the check itself)', () => {
    const fake = new Map<string, string[]>([
      ['core/a.ts', ['store/b.ts']],
      ['store/b.ts', ['core/a.ts']],
    ]);
    expect(upward(fake)).toHaveLength(1);
    expect(cycles(fake)).toEqual([['core/a.ts', 'store/b.ts']]);
    expect(cycles(folderGraph(fake))).toEqual([['core', 'store']]);
  });
});
