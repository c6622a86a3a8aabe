import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import ts from 'typescript';
import { afterAll, describe, expect, inject, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const dir = join(root, '.tsdoc-examples');

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((d) => {
    const path = join(folder, d.name);
    if (d.isDirectory()) return sourceFiles(path);
    return d.name.endsWith('.ts') && !d.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Every `@example` code block in the TSDoc of `file`. */
function examples(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/@example\s*\n\s*\* ```ts\n([\s\S]*?)\n\s*\* ```/g)].map((m) =>
    (m[1] as string)
      .split('\n')
      .map((line) => line.replace(/^\s*\* ?/, ''))
      .join('\n'),
  );
}

/**
 * A line `expression; // value` states the expression's result: it becomes a deep-equality check
 * when the comment is a JavaScript literal (`'fresh'`, `1250`, `{ coins: -300n }`, `[]`). Prose
 * comments are left alone.
 */
function withChecks(code: string): string {
  return (
    code
      .split('\n')
      // The prelude already binds every export of 'onceflow' and 'onceflow/testing'.
      .filter((line) => !/^import .* from 'onceflow(\/testing)?';$/.test(line.trim()))
      .map((line) => {
        const m = /^(\s*)([^/]*?);\s*\/\/\s*(.+)$/.exec(line);
        if (!m || /^\s*(const|let|var|import|export|return|for|if|while|throw)\b/.test(m[2] as string))
          return line;
        if (!isLiteral(m[3] as string)) return line;
        return `${m[1]}await __check(async () => (${m[2]}), ${JSON.stringify(m[3])});`;
      })
      .join('\n')
  );
}

function isLiteral(text: string): boolean {
  try {
    new Function(`return (${text});`)();
    return true;
  } catch {
    return false;
  }
}

const prelude = `
import * as __core from 'onceflow';
import * as __testing from 'onceflow/testing';
import assert from 'node:assert/strict';
const { ${Object.keys(await import('../../src/index.js')).join(', ')} } = __core;
const { ${Object.keys(await import('../../src/testing/index.js')).join(', ')} } = __testing;
async function __check(fn, expectedText) {
  let expected;
  try { expected = new Function('return (' + expectedText + ')')(); } catch { return; }
  assert.deepStrictEqual(await fn(), expected, 'example says ' + expectedText);
}
`;

describe('TSDoc @example blocks run and their stated results hold', () => {
  const files = sourceFiles(join(root, 'src'));
  mkdirSync(dir, { recursive: true });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const all = files.flatMap((f) => examples(f).map((code, i) => ({ file: relative(root, f), i, code })));

  it('finds examples in the public modules', () => {
    expect(all.length).toBeGreaterThanOrEqual(10);
  });

  for (const { file, i, code } of all) {
    it(`${file} example ${i + 1}`, async () => {
      const js = ts.transpileModule(prelude + withChecks(code), {
        compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
      }).outputText;
      const out = join(dir, `${file.replaceAll('/', '_')}-${i + 1}.mjs`);
      writeFileSync(out, js);
      const env = { ...process.env, REDIS_URL: inject('redisUrl'), DATABASE_URL: inject('postgresUrl') };
      const { stderr } = await run(process.execPath, [out], { cwd: root, env });
      expect(stderr).toBe('');
    });
  }
});
