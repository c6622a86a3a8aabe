// Runs one suite file in this process and writes its result as JSON on stdout (progress on
// stderr). Started by run.mjs as `node --expose-gc bench/lib/child.mjs <file> [options]`.
import { pathToFileURL } from 'node:url';
import { runSuite } from './harness.mjs';

const [file, optionsJson = '{}'] = process.argv.slice(2);
const options = JSON.parse(optionsJson);
const { default: suite } = await import(pathToFileURL(file).href);
const log =
  options.quiet || !process.stderr.isTTY ? () => {} : (line) => process.stderr.write(`  … ${line}\x1b[K\r`);
const result = await runSuite(suite, { ...options, log });
if (!options.quiet && process.stderr.isTTY) process.stderr.write('\x1b[K');
// Exit once the result is out, even if a suite left a handle open.
process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(0));
