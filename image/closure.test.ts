import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ARCHES, archOf } from './arch';
import { InputError, moduleClosure, productionPackages } from './closure';
import { checkInputs } from './rootfs';

const ROOT = join(__dirname, '..');

/** A folder with the given files (paths relative to it). */
function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'modrule-closure-'));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

// Compiled the way tsc writes CommonJS: static requires, and lazy ones for the subcommands.
const COMPILED = {
  'dist/cli/main.js':
    '"use strict";\nconst io_1 = require("./io");\nconst yaml_1 = require("yaml");\n' +
    "const load = async () => (await Promise.resolve().then(() => __importStar(require('./operator')))).run;\n",
  'dist/cli/io.js': '"use strict";\nconst fs = require("node:fs");\nconst os = require("os");\n',
  'dist/cli/operator.js':
    '"use strict";\nconst k = require("@kubernetes/client-node/dist/config");\nrequire("../util");\n',
  'dist/util/index.js': '"use strict";\n',
  'dist/bench/main.js': '"use strict";\nrequire("autocannon");\n',
};

describe('moduleClosure', () => {
  it('follows static and lazy requires from the entry point, and lists the packages they need', () => {
    const dir = tree(COMPILED);
    expect(moduleClosure(dir, 'dist/cli/main.js')).toEqual({
      files: ['dist/cli/io.js', 'dist/cli/main.js', 'dist/cli/operator.js', 'dist/util/index.js'],
      packages: ['@kubernetes/client-node', 'yaml'],
    });
  });

  it('says to compile first when dist/ is missing', () => {
    const dir = tree({ 'package.json': '{}' });
    expect(() => moduleClosure(dir, 'dist/cli/main.js')).toThrow(
      new InputError(
        `${join(dir, 'dist/cli/main.js')} is missing: compile the TypeScript first (npm run build; make image does it)`,
      ),
    );
  });

  it('refuses a require of a compiled file that is not there', () => {
    const dir = tree({ 'dist/cli/main.js': 'require("./gone");\n' });
    expect(() => moduleClosure(dir, 'dist/cli/main.js')).toThrow(/dist\/cli\/main\.js requires \.\/gone/);
  });
});

describe('productionPackages', () => {
  const packages = productionPackages(ROOT);
  const names = packages.map((p) => p.name);

  it("holds the production dependencies and theirs, from this repository's package-lock.json", () => {
    expect(names).toEqual(
      expect.arrayContaining(['re2', 'yaml', 'prom-client', 'winston', '@kubernetes/client-node']),
    );
    expect(packages.find((p) => p.path === 'node_modules/re2')?.version).toMatch(/^1\.\d+\.\d+$/);
  });

  it('leaves out development packages and what only builds the re2 addon', () => {
    for (const dev of [
      'jest',
      'typescript',
      'eslint',
      'autocannon',
      'node-gyp',
      'nan',
      'install-artifact-from-github',
    ])
      expect([dev, names.includes(dev)]).toEqual([dev, false]);
  });
});

describe('checkInputs', () => {
  /** A repository with this one's lock and node_modules and a compiled entry point. */
  function repository(): string {
    const dir = tree({ 'dist/cli/main.js': 'require("yaml");\nrequire("re2");\n' });
    copyFileSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
    copyFileSync(join(ROOT, 'package-lock.json'), join(dir, 'package-lock.json'));
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    return dir;
  }

  it('accepts this repository for this machine', () => {
    const { dist, packages } = checkInputs(repository(), archOf(process.arch));
    expect(dist).toEqual(['dist/cli/main.js']);
    expect(packages.length).toBeGreaterThan(10);
  });

  it('refuses a native addon built for another architecture, saying how to build for the right one', () => {
    const other = ARCHES.find((a) => a.node !== process.arch)!;
    const here = archOf(process.arch);
    expect(() => checkInputs(repository(), other)).toThrow(
      new InputError(
        `node_modules/re2/build/Release/re2.node is built for ${here.elfName}, the image is for ${other.oci} ` +
          `(${other.elfName}): install node_modules on an ${other.oci} machine (the Dockerfile's build stage does, ` +
          'under docker buildx --platform)',
      ),
    );
  });

  it('refuses compiled code that needs a package that is not a production dependency', () => {
    const dir = repository();
    writeFileSync(join(dir, 'dist/cli/main.js'), 'require("yaml");\nrequire("ajv");\n');
    expect(() => checkInputs(dir, archOf(process.arch))).toThrow(
      'dist/ requires "ajv", which is not a production dependency in package.json',
    );
  });

  it('refuses a repository whose dependencies are not installed', () => {
    const dir = tree({ 'dist/cli/main.js': 'require("yaml");\n' });
    copyFileSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
    copyFileSync(join(ROOT, 'package-lock.json'), join(dir, 'package-lock.json'));
    expect(() => checkInputs(dir, archOf(process.arch))).toThrow(
      /is missing: install the dependencies first \(npm ci\)/,
    );
  });
});
