import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * The checks `npm run lint` runs over the tree (scripts/check-layers.mjs, scripts/check-structure.mjs),
 * each run on a small tree made for the case: they must fail on what they exist to catch.
 */
const REPO = join(__dirname, '..', '..');

function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'sb-check-'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

function run(script: string, args: string[]): { code: number; out: string } {
  try {
    return { code: 0, out: execFileSync(process.execPath, [join(REPO, 'scripts', script), ...args], { encoding: 'utf8' }) };
  } catch (e) {
    const err = e as { status: number; stdout: string; stderr: string };
    return { code: err.status, out: `${err.stdout}${err.stderr}` };
  }
}

const roots: string[] = [];
afterAll(() => roots.forEach((r) => rmSync(r, { recursive: true, force: true })));
const src = (files: Record<string, string>) => {
  const root = tree(files);
  roots.push(root);
  return root;
};

describe('scripts/check-layers.mjs', () => {
  it('passes a tree whose imports point down', () => {
    const root = src({ 'common/a.ts': 'export const a = 1;\n', 'fleet/b.ts': "import { a } from '../common/a';\nexport const b = a;\n" });
    expect(run('check-layers.mjs', ['--root', root])).toMatchObject({ code: 0 });
  });

  it('fails on a cycle between two modules of one layer', () => {
    const root = src({
      'fleet/a.ts': "import { b } from '../routing/b';\nexport const a = b;\n",
      'routing/b.ts': "import { a } from '../fleet/a';\nexport const b = a;\n",
    });
    const r = run('check-layers.mjs', ['--root', root]);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/cycle between modules: fleet, routing/);
  });

  it('fails on a cycle that runs through Nest wiring (a *.module.ts file)', () => {
    const root = src({
      'fleet/fleet.module.ts': "import { DispatchModule } from '../dispatch/dispatch.module';\nexport class FleetModule { d = DispatchModule; }\n",
      'dispatch/dispatch.module.ts': "import { FleetModule } from '../fleet/fleet.module';\nexport class DispatchModule { f = FleetModule; }\n",
    });
    const r = run('check-layers.mjs', ['--root', root]);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/cycle between modules: dispatch, fleet/);
  });

  it('fails when more imports than --max point at a higher layer, and when the daemon imports the gateway', () => {
    const files: Record<string, string> = { 'dispatch/d.ts': 'export const d = 1;\n' };
    for (let i = 0; i < 3; i++) files[`common/c${i}.ts`] = "import { d } from '../dispatch/d';\nexport const c = d;\n";
    expect(run('check-layers.mjs', ['--root', src(files), '--max', '2']).code).toBe(1);
    expect(run('check-layers.mjs', ['--root', src(files), '--max', '3']).code).toBe(0);
    const daemon = src({ 'fleet/f.ts': 'export const f = 1;\n', 'worker/w.ts': "import { f } from '../fleet/f';\nexport const w = f;\n" });
    expect(run('check-layers.mjs', ['--root', daemon]).code).toBe(1);
  });

  it('reads an import after a string holding `/*` (not a comment): the cycle behind it fails', () => {
    const root = src({
      'fleet/a.ts': "export const accept = 'application/*';\nimport { b } from '../routing/b';\n/** b, under another name. */\nexport const a = b;\n",
      'routing/b.ts': "export const b = 1;\nexport const uses = () => import('../fleet/a');\n",
    });
    const r = run('check-layers.mjs', ['--root', root]);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/cycle between modules: fleet, routing/);
  });

  const daemonTree = (files: Record<string, string>) =>
    src({
      'protocol/p.ts': 'export const p = 1;\n',
      'common/c.ts': 'export interface C {\n  n: number;\n}\nexport const c = 1;\n',
      'cli.ts': "export const run = () => import('./worker/cli');\n",
      'worker/cli.ts': "import { p } from '../protocol/p';\nimport { C } from '../common/c';\nexport const w: C = { n: p };\n",
      ...files,
    });

  it('passes the daemon importing protocol/, types from common/, and the top-level cli launching it', () => {
    expect(run('check-layers.mjs', ['--root', daemonTree({})])).toMatchObject({ code: 0 });
  });

  it('fails on an import into worker/ from outside it, and on the cycle it closes', () => {
    const r = run('check-layers.mjs', ['--root', daemonTree({ 'common/d.ts': "import { w } from '../worker/cli';\nexport const d = w;\n" })]);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/imports into worker\/ from outside it.*: 1\n {2}common\/d.ts -> worker\/cli.ts/);
    expect(r.out).toMatch(/cycle between modules: common, worker/);
  });

  it('fails when the daemon loads common/ at run time (it ships without it)', () => {
    const r = run('check-layers.mjs', ['--root', daemonTree({ 'worker/v.ts': "import { c } from '../common/c';\nexport const v = c;\n" })]);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/worker\/ imports beyond protocol\/.*: 1\n {2}worker\/v.ts -> common\/c.ts/);
  });
});

describe('scripts/check-structure.mjs', () => {
  it('fails on a file over 400 lines and on a class with more than 25 methods; passes a small tree', () => {
    const long = src({ 'long.ts': Array.from({ length: 401 }, (_, i) => `export const v${i} = ${i};`).join('\n') + '\n' });
    expect(run('check-structure.mjs', [long]).code).toBe(1);
    const methods = Array.from({ length: 26 }, (_, i) => `  m${i}(): number { return ${i}; }`).join('\n');
    const wide = src({ 'wide.ts': `export class Wide {\n${methods}\n}\n` });
    const r = run('check-structure.mjs', [wide]);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/class Wide has 26 methods/);
    expect(run('check-structure.mjs', [src({ 'ok.ts': 'export class Ok {\n  m(): number { return 1; }\n}\n' })]).code).toBe(0);
  });
});
