const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * `length` base64url characters from `crypto.getRandomValues` (in browsers and Node >= 19 as
 * `globalThis.crypto`): 22 carry 132 bits, over the protocol's 96 for a session and enough that
 * ids drawn by every client of a session never meet. `undefined` when no such source exists.
 */
export function randomId(length = 22): string | undefined {
  const crypto = (globalThis as { crypto?: { getRandomValues?: (a: Uint8Array) => Uint8Array } }).crypto;
  if (typeof crypto?.getRandomValues !== 'function') return undefined;
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  let out = '';
  // 256 is a multiple of 64: the low 6 bits of a uniform byte are uniform.
  for (const b of bytes) out += ALPHABET[b & 63];
  return out;
}
