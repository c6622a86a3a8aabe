import { describe, expect, it } from 'vitest';
import { demoExitCode, EXIT_FAILED, EXIT_OK, EXIT_USAGE } from './exit-code.js';

describe('demoExitCode', () => {
  it('is 1 when the reference row is not exact, 0 when it is', () => {
    expect(demoExitCode({ ok: false })).toBe(1);
    expect(demoExitCode({ ok: true })).toBe(0);
  });

  it('keeps the documented codes: 0 ok, 1 failed, 2 usage', () => {
    expect([EXIT_OK, EXIT_FAILED, EXIT_USAGE]).toEqual([0, 1, 2]);
  });
});
