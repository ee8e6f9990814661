// ESLint 9 flat config (issue 17, "Tooling"). Recommended sets of ESLint and typescript-eslint, without
// type-aware rules so the whole tree lints in seconds; eslint-config-prettier last, so formatting is
// Prettier's alone (`prettier --check` in `npm run lint`). Dependency direction between modules is checked
// by `npm run lint:layers` (scripts/check-layers.mjs), sizes by scripts/check-structure.mjs.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['node_modules/', 'dist/', 'coverage/', 'data/', 'test-artifacts/'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    languageOptions: { ecmaVersion: 2022, sourceType: 'module', globals: { ...globals.node } },
    rules: {
      // A leading underscore marks a deliberately unused binding, e.g. fields stripped by destructuring
      // (`{ declaredModels: _derived, ...record }`) or a callback parameter kept for its position.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // `catch {}` is used deliberately where a failure is expected and harmless (each has a comment nearby).
      'no-empty': ['error', { allowEmptyCatch: true }],
      // Validators here match control characters on purpose (NUL bytes, header and log-line checks).
      'no-control-regex': 'off',
      // `import x = require('m')` is TypeScript's typed CommonJS import, used where the module object itself is needed.
      '@typescript-eslint/no-require-imports': ['error', { allowAsImport: true }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'prefer-const': ['error', { destructuring: 'all' }],
    },
  },
  {
    // Tests: jest globals; `any` is allowed for the untyped JSON bodies and internals that tests poke at.
    files: ['**/*.spec.ts', '**/*.e2e-spec.ts', 'test/**', 'contract-tests/**'],
    languageOptions: { globals: { ...globals.node, ...globals.jest } },
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // The dashboard page: plain ES modules run by the browser.
    files: ['src/dashboard/public/**/*.js'],
    languageOptions: { sourceType: 'module', globals: { ...globals.browser } },
  },
  {
    // Node scripts in CommonJS (benchmarks, scripts/*.js, jest configs, the compose files' mock backend):
    // `require` is how they import.
    files: ['bench/**/*.js', 'scripts/**/*.js', '**/jest.config.js', 'docker/**/*.js'],
    languageOptions: { sourceType: 'commonjs' },
    rules: {
      '@typescript-eslint/no-require-imports': 'off',
      // `const WebSocket = require('ws')` deliberately takes the name of Node's built-in global.
      'no-redeclare': ['error', { builtinGlobals: false }],
    },
  },
  prettier,
);
