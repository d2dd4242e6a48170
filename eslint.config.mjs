import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Size and shape limits, so files and functions do not grow back (docs/architecture.md: files of 50-300 lines,
// small functions). Errors everywhere; the files that do not meet one yet are in NOT_YET, at 'warn' for that rule.
const LIMITS = {
  'max-lines': ['error', { max: 400 }],
  'max-lines-per-function': ['error', { max: 100, skipBlankLines: true, skipComments: true }],
  'max-params': ['error', { max: 5 }],
  complexity: ['error', { max: 25 }],
  'max-depth': ['error', { max: 5 }],
};

// Tests, end-to-end harnesses and benchmarks: tables of cases read better together and a describe() callback is as
// long as its cases, so a file may reach 800 lines and functions have no length limit. The other limits hold.
const TESTS = ['**/*.test.ts', 'test/**', 'bench/**'];
const TEST_LIMITS = {
  'max-lines': ['error', { max: 800 }],
  'max-lines-per-function': 'off',
};

// THE LIST TO SHRINK: files that break a limit today; there that rule warns instead of failing (with the same
// options). When a file meets the limit, delete it from the list. Never add a file: split the file or the function.
const NOT_YET = {
  'max-lines': [
    'engine/kubemod-compat.test.ts', // 1363 (tests: 800)
    'webhook/server.test.ts', // 819 (tests: 800)
  ],
  'max-lines-per-function': [
    'cli/testfile.ts', // parseTestSpec 118
    'jsonpath/operators.ts', // compileBinary 109
    'jsonpath/steps.ts', // compileSegments 148
    'rule/compile.ts', // analyzeModRule 164
    'operator/audit/scan.ts', // scanCluster 111
    'kube/kube.ts', // createKubeClient 160
    'operator/start.ts', // startOperator 180
    'store/local/source.ts', // load 122
    'template/lexer.ts', // lex 192, lexInsideAction 102
  ],
  'max-params': [
    'bench/load.ts', // load 6
    'cli/validate.ts', // finding 7
    'engine/patch-phase.ts', // runPatchRules 8, runRule 7, applyRule 6
    'engine/patch.ts', // resolveOne 8
    'engine/reject-phase.ts', // runRejectRules 8
    'jsonpath/steps.ts', // an arrow function 6
    'rule/compile-match.ts', // constructor 6
    'rule/interned-rule.ts', // constructor 6, internedRule 8
    'native/guard.ts', // everyElementGuard 6, valueGuard 6, pathGuard 7
    'native/patch.ts', // literalOperation 7
    'native/predicate.ts', // typedGuard 6
    'native/template.ts', // guard 7
    'operator/status/events.ts', // warningEvent 6
    'operator/testing/fake-store.ts', // update 6
    'patch/yaml-document.ts', // put 7
    'store/snapshot.ts', // Snapshot constructor 6
    'test/e2e/controlplane.ts', // constructor 8
    'test/e2e/native-cluster.ts', // constructor 6
  ],
  complexity: [
    'operator/scope/widener.ts', // widen 32
    'bench/dragnet.bench.ts', // run 26
    'cli/apply.ts', // run 26
    'cli/validate.ts', // validatePaths 26
    'engine/differential.test.ts', // referenceAdmit 45
    'rule/compile-match.ts', // compileMatchItem 27
    'rule/compile-patch.ts', // compilePatchOperation 32
    'rule/compile.ts', // analyzeModRule 55
    'rule/references.ts', // compileReference 43
    'native/predicate.ts', // binaryPredicate 27
    'operator/audit/reports.ts', // write 27
    'operator/scope/controller.ts', // reconcile 39
    'operator/testing/fake-apiserver.ts', // dispatch 30
    'operator/testing/fake-cluster.ts', // request 29
    'scope/never-narrower.test.ts', // a property 28
    'scope/products.ts', // productsOf 34
    'store/local/source.ts', // load 27
    'template/fmt.ts', // formatOne 53
    'template/lexer.ts', // lexInsideAction 54, lexNumber 32
    'template/parse-pipeline.ts', // pipeline 26
    'template/pipeline.ts', // evalFunction 28
    'webhook/review.ts', // parseAdmissionReview 26
  ],
  'max-depth': [
    'engine/differential.test.ts', // 6
  ],
};

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
      ...LIMITS,
    },
  },
  { files: TESTS, rules: TEST_LIMITS },
  // A severity alone keeps the options set above (400 lines, or 800 for tests).
  ...Object.entries(NOT_YET).map(([rule, files]) => ({ files, rules: { [rule]: 'warn' } })),
);
