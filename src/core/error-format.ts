/** How an error message renders what it was given: short, typed, never a whole payload. */

// A key may be 512 bytes: 80 characters are enough to recognise it in a message.
export function clip(key: string): string {
  return key.length > 80 ? `${key.slice(0, 77)}...` : key;
}

/**
 * Renders a value for an error message: `` `0` (number) ``, `` `"a"` (string) ``, `` `5n` (bigint) ``.
 * Long renderings are cut so one bad payload cannot flood a log.
 */
export function describe(value: unknown): string {
  let type: string;
  try {
    type = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
  } catch {
    return '`[revoked proxy]`'; // Array.isArray throws on one
  }
  let text: string;
  if (typeof value === 'bigint') text = `${value}n`;
  else if (typeof value === 'string') text = JSON.stringify(value);
  else if (typeof value === 'function') text = value.name ? `[function ${value.name}]` : '[function]';
  else if (typeof value === 'object' && value !== null) {
    try {
      text = JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)) ?? String(value);
    } catch {
      text = Object.prototype.toString.call(value);
    }
  } else text = String(value);
  // 80 characters is enough to recognise a value; the full payload belongs in a debug log, not an error.
  if (text.length > 80) text = `${text.slice(0, 77)}...`;
  return type === 'undefined' || type === 'null' ? `\`${text}\`` : `\`${text}\` (${type})`;
}
