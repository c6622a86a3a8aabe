import { isOnceflowError } from '../../src/core/errors.js';

/** What `fn` threw; fails the test when it returns normally. */
export function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
}

/** What `promise` rejected with; fails the test when it resolves. */
export async function rejected(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

/** The code and message of an onceflow error; rethrows anything else, so a stray bug is not hidden. */
export function coded(err: unknown): { code: string; message: string } {
  if (isOnceflowError(err)) return { code: err.code, message: err.message };
  throw err;
}
