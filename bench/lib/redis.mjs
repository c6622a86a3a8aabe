// Redis helpers shared by the suites and the measuring scripts.

/** Removes every key under `prefix` (SCAN + UNLINK, a page at a time; one standalone server). */
export async function unlinkPrefix(client, prefix) {
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await client.unlink(...keys);
  } while (cursor !== '0');
}
