#!/usr/bin/env node
// Installs the agents test tier's CLIs (@anthropic-ai/claude-code, @openai/codex; ~800 MB with their
// native binaries) into agents/node_modules from agents/package-lock.json, only when they are missing
// or stale. They are not the project's dependencies, so a new user's `npm ci` at the root stays small;
// `npm run test:agents` runs this first.
//
//   node scripts/agents-install.mjs            install if needed, then say which versions are there
//   node scripts/agents-install.mjs --check    exit 1 (installing nothing) when an install is needed
//
// "Stale" means: the lock file changed since the last install here (its hash is kept in
// agents/node_modules/.switchboard-lock-sha256), or a locked CLI is missing or has another version.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const prefix = join(repo, 'agents');
const lockPath = join(prefix, 'package-lock.json');
const modules = join(prefix, 'node_modules');
const stamp = join(modules, '.switchboard-lock-sha256');
/** The CLIs and the binary each must leave in node_modules/.bin. */
const CLIS = [
  { name: '@anthropic-ai/claude-code', bin: 'claude' },
  { name: '@openai/codex', bin: 'codex' },
];

const say = (line) => console.log(`agents-install: ${line}`);

function lockHash() {
  return createHash('sha256').update(readFileSync(lockPath)).digest('hex');
}

/** Why an install is needed, or undefined when agents/node_modules matches the lock file. */
function staleness(lock) {
  if (!existsSync(modules)) return 'agents/node_modules is missing';
  if (!existsSync(stamp) || readFileSync(stamp, 'utf8').trim() !== lockHash()) return 'agents/package-lock.json changed since the last install';
  for (const { name, bin } of CLIS) {
    const locked = lock.packages?.[`node_modules/${name}`]?.version;
    const manifest = join(modules, name, 'package.json');
    if (!existsSync(manifest)) return `${name} is not installed`;
    const installed = JSON.parse(readFileSync(manifest, 'utf8')).version;
    if (installed !== locked) return `${name} is ${installed}, the lock file says ${locked}`;
    if (!existsSync(join(modules, '.bin', bin))) return `agents/node_modules/.bin/${bin} is missing`;
  }
  return undefined;
}

function versions() {
  return CLIS.map(({ name }) => `${name}@${JSON.parse(readFileSync(join(modules, name, 'package.json'), 'utf8')).version}`).join(', ');
}

const lock = JSON.parse(readFileSync(lockPath, 'utf8'));
const reason = staleness(lock);
if (!reason) {
  say(`up to date (${versions()})`);
  process.exit(0);
}
if (process.argv.includes('--check')) {
  say(`install needed: ${reason}`);
  process.exit(1);
}

say(`${reason}: running npm ci --prefix agents (about 800 MB, the CLIs' native binaries)`);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
// --prefix: agents/ is its own npm project (package.json + lock file); the root project is untouched.
const result = spawnSync(npm, ['ci', '--prefix', prefix, '--no-audit', '--no-fund'], { stdio: 'inherit', cwd: repo });
if (result.status !== 0) {
  say(`npm ci failed (${result.error?.message ?? `exit ${result.status}`})`);
  process.exit(1);
}
writeFileSync(stamp, `${lockHash()}\n`);
const after = staleness(lock);
if (after) {
  say(`installed, but ${after}`);
  process.exit(1);
}
say(`installed ${versions()}`);
