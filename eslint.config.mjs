import { readFileSync } from 'node:fs';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Size and shape limits, so files and functions do not grow back (docs/architecture.md: files of 50-300 lines,
// small functions), kept in eslint.limits.json: errors everywhere, tests with their own file and function limits
// (tables of cases read better together), and the ratchet `notYet` of files pinned at the value they have today.
const { limits, tests, testLimits, notYet } = JSON.parse(
  readFileSync(new URL('./eslint.limits.json', import.meta.url), 'utf8'),
);

/** A ratchet entry: the rule as an error for that file, with its base options and the file's pinned `max`. */
function pinned(rule, file, max) {
  const isTest = file.endsWith('.test.ts') || file.startsWith('test/') || file.startsWith('bench/');
  const base = (isTest && testLimits[rule]) || limits[rule];
  return ['error', { ...(Array.isArray(base) ? base[1] : {}), max }];
}

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '**/*.js', '**/*.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-eval': 'error',
      'no-new-func': 'error',
      'no-implied-eval': 'error',
      ...limits,
    },
  },
  { files: tests, rules: testLimits },
  ...Object.entries(notYet).flatMap(([rule, files]) =>
    Object.entries(files).map(([file, { max }]) => ({
      files: [file],
      rules: { [rule]: pinned(rule, file, max) },
    })),
  ),
);
