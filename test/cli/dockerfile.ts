/**
 * Just enough of the Dockerfile and .dockerignore formats to check the deployment kit without a
 * Docker engine: stages, COPY sources, WORKDIR, ENV, CMD/ENTRYPOINT, HEALTHCHECK.
 */

export interface Instruction {
  keyword: string;
  /** The rest of the instruction, continuation lines joined. */
  args: string;
  line: number;
}

export interface Stage {
  base: string;
  name?: string;
  index: number;
  instructions: Instruction[];
}

export function parseDockerfile(text: string): Stage[] {
  const instructions: Instruction[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let line = lines[i];
    if (/^\s*(#|$)/.test(line)) continue;
    while (/\\\s*$/.test(line) && i + 1 < lines.length) {
      i++;
      const next = lines[i];
      if (/^\s*#/.test(next)) continue;
      line = `${line.replace(/\\\s*$/, '')} ${next.trim()}`;
    }
    const m = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line);
    if (!m) throw new Error(`line ${start + 1}: not an instruction: ${line}`);
    instructions.push({ keyword: m[1].toUpperCase(), args: m[2].trim(), line: start + 1 });
  }
  const stages: Stage[] = [];
  for (const ins of instructions) {
    if (ins.keyword === 'FROM') {
      const m = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      if (!m) throw new Error(`line ${ins.line}: bad FROM: ${ins.args}`);
      stages.push({ base: m[1], name: m[2], index: stages.length, instructions: [] });
    } else {
      if (stages.length === 0 && ins.keyword !== 'ARG') throw new Error(`line ${ins.line}: ${ins.keyword} before FROM`);
      stages[stages.length - 1]?.instructions.push(ins);
    }
  }
  return stages;
}

export interface Copy {
  from?: string;
  sources: string[];
  dest: string;
  line: number;
}

export function copiesOf(stage: Stage): Copy[] {
  return stage.instructions
    .filter((i) => i.keyword === 'COPY' || i.keyword === 'ADD')
    .map((i) => {
      const words = splitWords(i.args);
      let from: string | undefined;
      const rest: string[] = [];
      for (const w of words) {
        const f = /^--from=(.+)$/.exec(w);
        if (f) from = f[1];
        else if (!w.startsWith('--')) rest.push(w);
      }
      if (rest.length < 2) throw new Error(`line ${i.line}: COPY needs a source and a destination`);
      return { from, sources: rest.slice(0, -1), dest: rest[rest.length - 1], line: i.line };
    });
}

/** The JSON (exec) form of CMD / ENTRYPOINT / HEALTHCHECK CMD, or the shell form wrapped in sh -c. */
export function execForm(args: string): string[] {
  const trimmed = args.trim();
  if (trimmed.startsWith('[')) return JSON.parse(trimmed) as string[];
  return ['/bin/sh', '-c', trimmed];
}

/** The last value of an instruction in a stage (WORKDIR, CMD, ENTRYPOINT), if any. */
export function lastOf(stage: Stage, keyword: string): Instruction | undefined {
  return [...stage.instructions].reverse().find((i) => i.keyword === keyword);
}

/** ENV of a stage: both `ENV k=v k2="v 2"` and the legacy `ENV k v`. */
export function envOf(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const i of stage.instructions.filter((x) => x.keyword === 'ENV')) {
    if (!i.args.split(/\s+/)[0].includes('=')) {
      const [k, ...v] = i.args.split(/\s+/);
      env[k] = v.join(' ');
      continue;
    }
    for (const w of splitWords(i.args)) {
      const eq = w.indexOf('=');
      env[w.slice(0, eq)] = w.slice(eq + 1);
    }
  }
  return env;
}

/** HEALTHCHECK's command in exec form, without its options. */
export function healthcheckOf(stage: Stage): string[] | undefined {
  const h = lastOf(stage, 'HEALTHCHECK');
  if (!h || /^NONE$/i.test(h.args)) return undefined;
  const m = /\bCMD\s+(.*)$/.exec(h.args);
  if (!m) throw new Error(`line ${h.line}: HEALTHCHECK without CMD`);
  return execForm(m[1]);
}

/** Words separated by blanks, double quotes grouping (and removed). */
function splitWords(text: string): string[] {
  const out: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|(\S+)/g;
  let m: RegExpExecArray | null;
  let current = '';
  let lastEnd = -1;
  while ((m = re.exec(text))) {
    const piece = m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2];
    if (m.index === lastEnd) current += piece;
    else {
      if (lastEnd !== -1) out.push(current);
      current = piece;
    }
    lastEnd = re.lastIndex;
  }
  if (lastEnd !== -1) out.push(current);
  return out;
}

/** A .dockerignore as a matcher of context-relative paths (patterns with *, ?, ** and ! exceptions). */
export function dockerignore(text: string): (path: string) => boolean {
  const rules = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const negate = l.startsWith('!');
      const pattern = (negate ? l.slice(1) : l).replace(/^\/+/, '').replace(/\/+$/, '');
      return { negate, re: globToRegExp(pattern) };
    });
  return (path: string) => {
    const clean = path.replace(/^\.?\/+/, '').replace(/\/+$/, '');
    let ignored = false;
    for (const r of rules) {
      // A pattern that matches a parent directory excludes everything below it.
      const parts = clean.split('/');
      const hit = parts.some((_, i) => r.re.test(parts.slice(0, i + 1).join('/')));
      if (hit) ignored = !r.negate;
    }
    return ignored;
  };
}

export function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*' && glob[i + 1] === '*') {
      re += '.*';
      i++;
      if (glob[i + 1] === '/') i++;
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}
