/**
 * Replaces the value of the top-level `"model"` key in a raw JSON object text, leaving every other
 * byte as the client sent it (re-serialising would reformat numbers and lose big integers).
 * Every top-level occurrence is replaced, since JSON.parse lets the last duplicate win.
 * The caller has already checked that the text is a JSON object whose `model` is a string.
 */
export function replaceTopLevelModel(raw: string, model: string): string {
  const replacement = JSON.stringify(model);
  let out = '';
  let copiedUpTo = 0;
  let depth = 0;
  let expectKey = false;
  let i = 0;
  while (i < raw.length) {
    const c = raw[i];
    if (c === '"') {
      const end = stringEnd(raw, i);
      if (depth === 1 && expectKey) {
        const key = JSON.parse(raw.slice(i, end)) as string;
        const colon = raw.indexOf(':', end);
        let v = colon + 1;
        while (v < raw.length && isSpace(raw[v])) v++;
        if (key === 'model' && raw[v] === '"') {
          const valueEnd = stringEnd(raw, v);
          out += raw.slice(copiedUpTo, v) + replacement;
          copiedUpTo = valueEnd;
          i = valueEnd;
          expectKey = false;
          continue;
        }
        expectKey = false;
        i = colon + 1;
        continue;
      }
      i = end;
      continue;
    }
    if (c === '{' || c === '[') {
      depth++;
      expectKey = c === '{' && depth === 1;
    } else if (c === '}' || c === ']') depth--;
    else if (c === ',' && depth === 1) expectKey = true;
    i++;
  }
  return out + raw.slice(copiedUpTo);
}

/** Index just past the closing quote of the JSON string starting at `start`. */
function stringEnd(raw: string, start: number): number {
  let i = start + 1;
  while (i < raw.length) {
    const c = raw[i];
    if (c === '\\') i += 2;
    else if (c === '"') return i + 1;
    else i++;
  }
  return raw.length;
}

function isSpace(c: string): boolean {
  return c === ' ' || c === '\t' || c === '\n' || c === '\r';
}
