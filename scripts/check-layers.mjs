#!/usr/bin/env node
// Dependency-direction check over src/ (issue 17). Plain Node and TypeScript's scanner, reads each file once.
//
// Every non-spec .ts file under src/ belongs to a module (its first directory under src/; files at the
// root of src/ are the top) and to a layer (LAYERS below; docs/architecture.md, "Layers", draws them).
// Files whose role is wiring or documentation are edges wherever they live (ROLE_EDGE below).
//
// Within one module nothing is checked: a module is one unit.
//
// Imports are read with TypeScript's `preProcessFile` (a scanner, not a regex: a `/*` or `//` inside a
// string is not a comment): `import`, `import type`, `export … from`, `import x = require()`, dynamic
// `import()` and `require()`. A type-only import counts like any other, for cycles and layers alike:
// types are a dependency on the module's design even when the compiled code drops them. The one place
// the difference matters is the daemon's use of common/ (below).
//
// Fails (exit 1) when
//   - the module graph has a cycle (every import counts, wiring, controllers and worker/ included);
//   - more than --max imports (default 20) point at a higher layer than the importing file's;
//   - worker/ (the daemon, its own program) imports anything but protocol/, or common/ for types only:
//     the daemon ships as src/worker and src/protocol alone (test/worker/cli.e2e-spec.ts packages it
//     so), so a common/ import must be one the compiled file drops;
//   - a file outside worker/ imports worker/ (but for the top-level cli.ts launching the daemon's CLI);
//   - a directory under src/ is in no layer (add it to LAYERS and to the docs).
//
// Usage: node scripts/check-layers.mjs [--max N] [--root DIR] [--quiet]
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { join, dirname, resolve, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const TOP = 4;
const APART = 'worker';
const WORKER_MAY_IMPORT = new Set(['worker', 'protocol']);
/** What worker/ may import for types only: the compiled daemon must not load it. */
const WORKER_MAY_IMPORT_TYPES = new Set(['common']);
/** The imports into worker/ from outside it that are allowed (file → target, under src/). */
const INTO_WORKER_ALLOWED = new Set(['cli.ts -> worker/cli.ts']);

/** Module (first directory under src/) → layer. Keep in step with docs/architecture.md, "Layers". */
export const LAYERS = {
  // 0 base: no server imports at all
  common: 0,
  protocol: 0,
  // 1 state and primitives: configuration, the DataSource, limit stores, logging/metrics core, hashing
  config: 1,
  database: 1,
  'rate-limit': 1,
  observability: 1,
  telemetry: 1,
  auth: 1,
  // 2 domain
  providers: 2,
  fleet: 2,
  registry: 2,
  routing: 2,
  queue: 2,
  tenancy: 2,
  'api-keys': 2,
  usage: 2,
  governance: 2,
  artifacts: 2,
  // 3 flow: a request's life
  dispatch: 3,
  translate: 3,
  cluster: 1,
  tasks: 3,
  lifecycle: 3,
  inference: 3,
  // 4 edges: transports, controllers, operator surfaces, documentation
  http: 4,
  'worker-link': 4,
  'cluster-link': 4,
  'control-plane': 4,
  dashboard: 4,
  openapi: 4,
  health: 4,
};

/**
 * Files that are edges by role wherever they live: Nest wiring (*.module.ts), transports
 * (*.controller.ts, *.guard.ts, *.filter.ts) and OpenAPI documentation (*.schemas.ts, read only by
 * controllers and the document builder). DTOs (*.dto.ts) are NOT edges: services validate with them.
 */
const ROLE_EDGE = /\.(controller|module|guard|filter|schemas)\.ts$/;

function parseArgs(argv) {
  const opts = { max: 20, root: null, quiet: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--max') opts.max = Number(argv[++i]);
    else if (a.startsWith('--max=')) opts.max = Number(a.slice(6));
    else if (a === '--root') opts.root = argv[++i];
    else if (a === '--quiet') opts.quiet = true;
    else if (a === '--help' || a === '-h') {
      console.log('usage: node scripts/check-layers.mjs [--max N] [--root DIR] [--quiet]');
      process.exit(0);
    } else {
      console.error(`unknown argument: ${a}`);
      process.exit(2);
    }
  }
  if (!Number.isInteger(opts.max) || opts.max < 0) {
    console.error('--max takes a non-negative integer');
    process.exit(2);
  }
  return opts;
}

function listSources(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    const st = statSync(full);
    if (st.isDirectory()) listSources(full, out);
    else if (name.endsWith('.ts') && !name.endsWith('.spec.ts') && !name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

/** The relative specifiers a file imports (type-only ones included), `require()` and `import()` too. */
function relativeImports(text) {
  const { importedFiles } = ts.preProcessFile(text, true, true);
  return [...new Set(importedFiles.map((f) => f.fileName).filter((name) => name.startsWith('.')))];
}

/**
 * The relative specifiers the compiled file still loads: the file compiled alone, as the daemon's
 * packaging does (test/worker/cli.e2e-spec.ts), so imports used only as types are dropped.
 */
function runtimeImports(text, fileName) {
  const { outputText } = ts.transpileModule(text, {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
    fileName,
  });
  return relativeImports(outputText);
}

function resolveImport(fromFile, spec) {
  const base = resolve(dirname(fromFile), spec);
  const candidates = [`${base}.ts`, join(base, 'index.ts'), base.replace(/\.js$/, '.ts'), base];
  for (const c of candidates) if (existsSync(c) && statSync(c).isFile()) return c;
  return `${base}.ts`; // unresolved (json, missing file): still placed by its path
}

function moduleOf(srcRoot, file) {
  const parts = relative(srcRoot, file).split(sep);
  return parts.length === 1 ? '(top)' : parts[0];
}

function layerOf(mod, file) {
  if (mod === '(top)' || ROLE_EDGE.test(file)) return TOP;
  return LAYERS[mod];
}

// Tarjan's strongly connected components over the module graph.
function cycles(graph) {
  let index = 0;
  const stack = [];
  const meta = new Map();
  const out = [];
  const visit = (v) => {
    meta.set(v, { index, low: index, on: true });
    index++;
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!meta.has(w)) {
        visit(w);
        meta.get(v).low = Math.min(meta.get(v).low, meta.get(w).low);
      } else if (meta.get(w).on) meta.get(v).low = Math.min(meta.get(v).low, meta.get(w).index);
    }
    if (meta.get(v).low === meta.get(v).index) {
      const comp = [];
      let w;
      do {
        w = stack.pop();
        meta.get(w).on = false;
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1) out.push(comp.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!meta.has(v)) visit(v);
  return out;
}

export function check(srcRoot) {
  const files = listSources(srcRoot).sort();
  const violations = [];
  const workerViolations = [];
  const intoWorker = [];
  const unknown = new Set();
  const graph = new Map(); // module → Set(module), every import
  const edgeFiles = new Map(); // "a -> b" → example "file -> target"
  let imports = 0;

  for (const file of files) {
    const mod = moduleOf(srcRoot, file);
    if (mod !== '(top)' && mod !== APART && !(mod in LAYERS)) unknown.add(mod);
    const layer = layerOf(mod, file);
    const text = readFileSync(file, 'utf8');
    let loaded; // runtimeImports, computed when a worker/ file imports common/
    for (const spec of relativeImports(text)) {
      const target = resolveImport(file, spec);
      const rel = relative(srcRoot, target);
      if (rel.startsWith('..')) continue; // outside src/ (package.json and the like)
      imports++;
      const tmod = moduleOf(srcRoot, target);
      const shown = `${relative(srcRoot, file)} -> ${rel}`;
      if (mod === APART && !WORKER_MAY_IMPORT.has(tmod)) {
        const typesOnly = WORKER_MAY_IMPORT_TYPES.has(tmod) && !(loaded ??= runtimeImports(text, file)).includes(spec);
        if (!typesOnly) workerViolations.push(shown);
      } else if (tmod === APART && mod !== APART) {
        if (!INTO_WORKER_ALLOWED.has(shown)) intoWorker.push(shown);
      } else if (mod !== APART) {
        if (tmod !== '(top)' && !(tmod in LAYERS)) unknown.add(tmod);
        const tlayer = layerOf(tmod, target);
        if (tmod !== mod && layer !== undefined && tlayer !== undefined && tlayer > layer) {
          violations.push(`${shown}   (${layer} -> ${tlayer})`);
        }
      }
      // Cycles count every import, wiring and controllers included: a cycle through a module file is still a cycle.
      if (tmod !== mod && tmod !== '(top)' && mod !== '(top)') {
        if (!graph.has(mod)) graph.set(mod, new Set());
        graph.get(mod).add(tmod);
        const key = `${mod} -> ${tmod}`;
        if (!edgeFiles.has(key)) edgeFiles.set(key, shown);
      }
    }
  }
  return { files: files.length, imports, violations, workerViolations, intoWorker, unknown: [...unknown].sort(), cycles: cycles(graph), graph, edgeFiles };
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  const here = dirname(fileURLToPath(import.meta.url));
  const srcRoot = resolve(opts.root ?? join(here, '..', 'src'));
  const r = check(srcRoot);
  let failed = false;

  if (r.unknown.length) {
    failed = true;
    console.log(`modules in no layer (add them to LAYERS in scripts/check-layers.mjs): ${r.unknown.join(', ')}`);
  }
  for (const comp of r.cycles) {
    failed = true;
    console.log(`cycle between modules: ${comp.join(', ')}`);
    // Only the links that point up or sideways can close the cycle; the downward ones are in order.
    const inComp = new Set(comp);
    let down = 0;
    for (const m of comp)
      for (const t of [...(r.graph.get(m) ?? [])].sort()) {
        if (!inComp.has(t)) continue;
        if (LAYERS[t] < LAYERS[m]) down++;
        else console.log(`  ${m} -> ${t}   e.g. ${r.edgeFiles.get(`${m} -> ${t}`)}`);
      }
    console.log(`  (and ${down} downward links inside the cycle)`);
  }
  if (r.workerViolations.length) {
    failed = true;
    console.log(`worker/ imports beyond protocol/ (and types from common/): ${r.workerViolations.length}`);
    for (const v of r.workerViolations) console.log(`  ${v}`);
  }
  if (r.intoWorker.length) {
    failed = true;
    console.log(`imports into worker/ from outside it (the daemon is its own program): ${r.intoWorker.length}`);
    for (const v of r.intoWorker) console.log(`  ${v}`);
  }
  if (!opts.quiet || r.violations.length > opts.max) for (const v of r.violations) console.log(`  ${v}`);
  const over = r.violations.length > opts.max;
  if (over) failed = true;
  console.log(
    `imports against the layer order: ${r.violations.length} (max ${opts.max}); module cycles: ${r.cycles.length}; ` +
      `${r.files} files, ${r.imports} relative imports`,
  );
  console.log(failed ? 'check-layers: FAIL' : 'check-layers: ok');
  process.exit(failed ? 1 : 0);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
