import { createHash } from 'node:crypto';

/**
 * The one serialization artifact ids are computed from: JSON with the keys of every object sorted
 * (by UTF-16 code units, JavaScript's default order), no whitespace, strings and numbers as
 * `JSON.stringify` writes them. Object members whose value is `undefined` are left out (as
 * `JSON.stringify` does); anything JSON cannot hold (NaN, Infinity, functions, bigints, cycles)
 * is an error rather than a silent rewrite. For JSON values this is the form RFC 8785 (JCS)
 * describes.
 */
export function canonicalJson(value: unknown): string {
  return write(value, new Set());
}

function write(value: unknown, open: Set<object>): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'string':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`canonical JSON cannot hold the number ${value}`);
      return JSON.stringify(value);
    case 'object':
      break;
    default:
      throw new TypeError(`canonical JSON cannot hold a ${typeof value}`);
  }
  const object = value as object;
  if (open.has(object)) throw new TypeError('canonical JSON cannot hold a cycle');
  open.add(object);
  let out: string;
  if (Array.isArray(object)) {
    out = `[${object.map((item) => (item === undefined ? 'null' : write(item, open))).join(',')}]`;
  } else {
    const record = object as Record<string, unknown>;
    const members = Object.keys(record)
      .filter((key) => record[key] !== undefined)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${write(record[key], open)}`);
    out = `{${members.join(',')}}`;
  }
  open.delete(object);
  return out;
}

/** Lower-case hex SHA-256 of the UTF-8 bytes of `text`. */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
