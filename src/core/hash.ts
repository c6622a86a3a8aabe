// Small non-cryptographic string hashes shared by the parts that sample or filter keys (the
// limiter's deviation sample, the Bloom filter): pure, no dependency.

/** 32-bit FNV-1a over the UTF-16 code units, unsigned. */
export function fnv1a(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** murmur3's 32-bit finaliser: every input bit reaches every output bit. Unsigned. */
export function fmix32(input: number): number {
  let h = input;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
