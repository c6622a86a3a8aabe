// Redis Cluster key slots (CRC16/XMODEM of the hash tag, mod 16384), so that a batch of ledger
// applies only ever groups keys of one slot: one script, one node, never CROSSSLOT.

const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
})();

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ (TABLE[((crc >> 8) ^ byte) & 0xff] as number);
  return crc;
}

/** The cluster slot of `key`, as Redis computes it (the first non-empty `{...}` is the hash tag). */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  if (open !== -1) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  return crc16(Buffer.from(key, 'utf8')) % 16384;
}

/** `items` grouped by the cluster slot of their key, in first-seen order within each group. */
export function groupBySlot<T>(items: readonly T[], keyOf: (item: T) => string): T[][] {
  const groups = new Map<number, T[]>();
  for (const item of items) {
    const slot = keySlot(keyOf(item));
    const group = groups.get(slot);
    if (group === undefined) groups.set(slot, [item]);
    else group.push(item);
  }
  return [...groups.values()];
}
