import { describe, expect, it } from 'vitest';
import { connectionLost, pgFailure, sqlState } from './pg-error.js';

describe('pg-error', () => {
  it("a socket error whose code looks like a SQLSTATE (EPIPE) is a lost connection, not the server's answer", () => {
    const epipe = Object.assign(new Error('write EPIPE'), { code: 'EPIPE', errno: -32, syscall: 'write' });
    expect(sqlState(epipe)).toBeUndefined();
    expect(connectionLost(epipe)).toBe(true);
    expect(pgFailure(epipe, 'write', true)).toEqual({ outcome: 'unknown', retriable: true });
    // The server's own error: its SQLSTATE, no system call.
    const unique = Object.assign(new Error('duplicate key'), { code: '23505', severity: 'ERROR' });
    expect(sqlState(unique)).toBe('23505');
    expect(pgFailure(unique, 'write', true)).toEqual({ outcome: 'not-applied', retriable: false });
  });
});
