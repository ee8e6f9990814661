#!/usr/bin/env node
/**
 * `npm run docs:config`: rewrites the key tables of docs/configuration.md from the declarations in
 * src/config (between `<!-- config-table:start NAME -->` and `<!-- config-table:end -->`).
 * `--check` only reports (exit 1) when the file is out of date. Runs the TypeScript sources
 * directly, transpiled on load, so no build is needed.
 */
const fs = require('node:fs');
const path = require('node:path');
const ts = require('typescript');

require.extensions['.ts'] = (module, filename) => {
  const source = fs.readFileSync(filename, 'utf8');
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
    fileName: filename,
  });
  module._compile(outputText, filename);
};

const { renderConfigTables } = require('../src/config/docs-table.ts');
const file = path.join(__dirname, '..', 'docs', 'configuration.md');
const before = fs.readFileSync(file, 'utf8');
const { text, tables } = renderConfigTables(before);
if (process.argv.includes('--check')) {
  if (text !== before) {
    console.error('docs/configuration.md is out of date: run npm run docs:config');
    process.exit(1);
  }
  console.log(`docs/configuration.md is up to date (${tables.join(', ')})`);
} else {
  fs.writeFileSync(file, text);
  console.log(`docs/configuration.md: ${tables.length} table(s) rewritten (${tables.join(', ')})`);
}
