// The "write your own store" example: examples/own-store.mjs is run by examples.test.ts (it
// asserts the conformance kit's ledger suite passes); here it is typechecked against the built
// onceflow/store types (its JSDoc, `// @ts-check`), and docs/testing.md must quote it whole.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const EXAMPLE = 'examples/own-store.mjs';

describe('the own-store example', () => {
  beforeAll(() => {
    execFileSync(process.execPath, [join(root, 'scripts', 'ensure-built.mjs')], {
      cwd: root,
      stdio: 'inherit',
    });
  });

  it('every example marked // @ts-check typechecks under the strict settings, onceflow resolved to the build', () => {
    const checked = readdirSync(join(root, 'examples'))
      .filter((f) => f.endsWith('.mjs'))
      .map((f) => join(root, 'examples', f))
      .filter((f) => readFileSync(f, 'utf8').startsWith('// @ts-check'));
    expect(checked).toContain(join(root, EXAMPLE));
    // The project's own options (tsconfig.json), with JavaScript checked; the examples import
    // 'onceflow/...' by self-reference, resolved through the exports map to dist/*.d.ts.
    const config = ts.getParsedCommandLineOfConfigFile(
      join(root, 'tsconfig.json'),
      {},
      {
        ...ts.sys,
        onUnRecoverableConfigFileDiagnostic: (d) => {
          throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
        },
      },
    );
    if (!config) throw new Error('tsconfig.json did not parse');
    const program = ts.createProgram(checked, {
      ...config.options,
      allowJs: true,
      checkJs: true,
      noEmit: true,
    });
    const problems = ts.getPreEmitDiagnostics(program).map((d) => {
      const where = d.file
        ? `${d.file.fileName}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}`
        : '';
      return `${where} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
    expect(problems).toEqual([]);
  });

  it('docs/testing.md quotes the example whole, as it is in examples/', () => {
    const doc = readFileSync(join(root, 'docs', 'testing.md'), 'utf8');
    const blocks = [...doc.matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
    expect(blocks).toContain(readFileSync(join(root, EXAMPLE), 'utf8'));
  });
});
