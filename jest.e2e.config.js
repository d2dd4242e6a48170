/** End-to-end suite: needs a real cluster (KUBECONFIG); skips itself without one. See docs/operator.md. */
const base = require('./jest.config.js');

module.exports = {
  ...base,
  testMatch: ['<rootDir>/test/e2e/**/*.e2e.ts'],
  testTimeout: 120000,
  // One cluster, one set of webhook configurations: suites must not run side by side on an existing cluster. Each
  // starts its own control plane with KUBEBUILDER_ASSETS (free ports, its own state): there CI runs two at a time.
  maxWorkers: 1,
  testSequencer: '<rootDir>/test/e2e-sequencer.js',
};
