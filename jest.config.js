/** ESM-only packages that @kubernetes/client-node pulls in: jest's CommonJS loader needs them transpiled. */
const esmPackages = ['@kubernetes/client-node', 'openid-client', 'oauth4webapi', 'jose'];

/** Unit and integration tests: no cluster, no network beyond loopback. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>'],
  testMatch: ['**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  transform: {
    '^.+\\.ts$': 'ts-jest',
    [`^.+/node_modules/(${esmPackages.join('|')})/.+\\.js$`]: [
      'ts-jest',
      { tsconfig: { allowJs: true, isolatedModules: true, module: 'commonjs', target: 'ES2022' } },
    ],
  },
  transformIgnorePatterns: [`/node_modules/(?!(${esmPackages.join('|')})/)`],
  reporters: ['default', '<rootDir>/test/summary-reporter.js'],
  testTimeout: 30000,
  // One worker per core (jest's default leaves one out): on CI's two cores the suite took 273 s with one, 169 s with two.
  maxWorkers: '100%',
};
