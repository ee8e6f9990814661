#!/usr/bin/env node
// Size limits of issue 17: no source file over MAX_LINES lines (every .ts/.js/.mjs/... file under src/,
// test/, bench/, scripts/, contract-tests/, docker/ and migrations/, specs and test support included: a
// test is code that is read and changed like any other), and no class under src/ with more than
// MAX_METHODS methods (methods, getters and setters of class declarations and class expressions; the
// constructor is not counted; specs are exempt from this one). Prints every offender and exits 1 if any.
//
//   node scripts/check-structure.mjs [root]      (with a root, only the files under it are checked,
//                                                 both limits applying to them)
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, extname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const MAX_LINES = 400;
const MAX_METHODS = 25;
const SOURCE_EXTENSIONS = new Set(['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs']);

/**
 * Files allowed past MAX_LINES because they are data or generated, not logic; each with why.
 * Paths are relative to the repository root. Keep this list short: split logic instead.
 */
const LINE_LIMIT_EXCEPTIONS = new Map([
  // (none yet)
]);

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** Directories whose files the line limit covers; the class-method limit covers only the first (src/). */
const LINE_LIMIT_ROOTS = ['src', 'test', 'bench', 'scripts', 'contract-tests', 'docker', 'migrations'];
const roots = process.argv[2] ? [resolve(process.argv[2])] : LINE_LIMIT_ROOTS.map((dir) => join(repo, dir));
const methodLimitRoot = process.argv[2] ? roots[0] : join(repo, 'src');

function* sourceFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules') yield* sourceFiles(path);
    } else if (SOURCE_EXTENSIONS.has(extname(entry.name)) && !entry.name.endsWith('.d.ts')) {
      yield path;
    }
  }
}

/** Lines as `wc -l` counts them, plus a last line without a newline. */
function lineCount(text) {
  if (text.length === 0) return 0;
  const newlines = text.split('\n').length - 1;
  return text.endsWith('\n') ? newlines : newlines + 1;
}

function scriptKind(path) {
  return /\.[cm]?js$/.test(path) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
}

/** Classes with their method counts (methods, getters, setters; overload signatures without a body are not counted). */
function classes(path, text) {
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, scriptKind(path));
  const found = [];
  const visit = (node) => {
    if (ts.isClassDeclaration(node) || ts.isClassExpression(node)) {
      let methods = 0;
      for (const member of node.members) {
        if (ts.isMethodDeclaration(member) && member.body === undefined && scriptKind(path) === ts.ScriptKind.TS && !hasAbstract(member)) continue;
        if (ts.isMethodDeclaration(member) || ts.isGetAccessorDeclaration(member) || ts.isSetAccessorDeclaration(member)) methods++;
      }
      const variable = ts.isVariableDeclaration(node.parent) && ts.isIdentifier(node.parent.name) ? node.parent.name.text : undefined;
      const name = node.name?.text ?? variable ?? '(anonymous class)';
      const { line } = file.getLineAndCharacterOfPosition(node.getStart(file));
      found.push({ name, line: line + 1, methods });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

function isSpec(path) {
  return /\.spec\.[cm]?[jt]s$/.test(path);
}

function isUnder(path, dir) {
  const rel = relative(dir, path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
}

function hasAbstract(node) {
  return (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.AbstractKeyword);
}

const longFiles = [];
const bigClasses = [];
for (const root of roots) {
  if (!existsSync(root)) continue;
  for (const path of sourceFiles(root)) {
    const rel = relative(repo, path);
    const text = readFileSync(path, 'utf8');
    const lines = lineCount(text);
    if (lines > MAX_LINES && !LINE_LIMIT_EXCEPTIONS.has(rel)) longFiles.push({ rel, lines });
    if (!isSpec(path) && isUnder(path, methodLimitRoot)) {
      for (const c of classes(path, text)) if (c.methods > MAX_METHODS) bigClasses.push({ ...c, rel });
    }
  }
}

longFiles.sort((a, b) => b.lines - a.lines);
bigClasses.sort((a, b) => b.methods - a.methods);
for (const f of longFiles) console.log(`${f.rel}: ${f.lines} lines (limit ${MAX_LINES})`);
for (const c of bigClasses) console.log(`${c.rel}:${c.line}: class ${c.name} has ${c.methods} methods (limit ${MAX_METHODS})`);
if (longFiles.length + bigClasses.length > 0) {
  console.log(`check-structure: ${longFiles.length} file(s) over ${MAX_LINES} lines, ${bigClasses.length} class(es) over ${MAX_METHODS} methods`);
  process.exit(1);
}
console.log(`check-structure: ok (files ≤ ${MAX_LINES} lines, classes ≤ ${MAX_METHODS} methods)`);
