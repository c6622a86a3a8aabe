const SAFE = /^[A-Za-z0-9_.-]*$/;

/**
 * Escapes an id for use inside a key built of parts: %XX for every UTF-8 byte outside
 * [A-Za-z0-9_.-]. Injective (two different ids never escape to the same string), and the result
 * holds no separator (`:`, `|`), no brace (`{`, `}`) and no glob character (`*`, `?`, `[`, `\`).
 */
export function escapeKeyPart(id: string): string {
  if (SAFE.test(id)) return id;
  let out = '';
  for (const byte of Buffer.from(id, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += byte < 128 && SAFE.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}
