import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gypEnv, RE2_ADDON, re2AddonFor, re2CacheFile, tryRe2 } from './addon';
import { ARCHES, archOf } from './arch';
import { InputError } from './closure';
import { NODE, SourceError } from './sources';

// The build itself (a few minutes) runs where the image is built: test/e2e/image.e2e.ts and .ci/unit-on-image-node.

const ROOT = join(__dirname, '..');
const here = archOf(process.arch);
// This machine's Node stands for the image's: its ABI is node_modules'.
const thisNode = { node: process.execPath, license: '', dir: dirname(dirname(process.execPath)) };

let work: string;
beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'modrule-addon-'));
});
afterEach(() => rmSync(work, { recursive: true, force: true }));

const options = () => ({
  root: ROOT,
  node: thisNode,
  arch: here,
  cacheDir: join(work, 'cache'),
  workDir: work,
});

describe('gypEnv', () => {
  it("leaves out npm's settings, which node-gyp would take over its --nodedir (npx on Debian's Node: /usr)", () => {
    // As `npm run` or `npx` hand them on to the process that builds the image.
    const env = gypEnv(
      {
        PATH: '/usr/bin',
        npm_config_nodedir: '/usr',
        npm_config_node_gyp: '/usr/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js',
        NPM_CONFIG_TARGET: '20.20.2',
        npm_lifecycle_event: 'image',
      },
      '/repo',
    );
    expect(env).toEqual({ PATH: '/usr/bin', npm_lifecycle_event: 'image', NODE_PATH: '/repo/node_modules' });
  });
});

describe('tryRe2', () => {
  it("loads an addon as re2 under the given Node and runs a pattern: node_modules' own under this Node", () => {
    expect(() => tryRe2(options(), join(ROOT, RE2_ADDON))).not.toThrow();
  });

  it('refuses a file that is not an addon this Node can load, saying why', () => {
    const bogus = join(work, 'bogus.node');
    writeFileSync(bogus, 'not an ELF file');
    expect(() => tryRe2(options(), bogus)).toThrow(SourceError);
    expect(() => tryRe2(options(), bogus)).toThrow(
      /failed \(in .*\):\n[\s\S]*(invalid ELF header|too short)/,
    );
  });
});

describe('re2CacheFile', () => {
  it("names re2's version, the image's Node and the architecture, and changes with re2's or nan's sources", () => {
    const file = re2CacheFile(ROOT, here, '/cache');
    expect(file).toMatch(
      new RegExp(`^/cache/re2-\\d+\\.\\d+\\.\\d+-[0-9a-f]{12}-node-${NODE.version}-${here.node}\\.node$`),
    );
    const repo = mkdtempSync(join(work, 'repo-'));
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { integrity: string }>;
    };
    lock.packages['node_modules/nan'].integrity = 'sha512-other';
    writeFileSync(join(repo, 'package-lock.json'), JSON.stringify(lock));
    expect(re2CacheFile(repo, here, '/cache')).not.toBe(file);
    expect(
      re2CacheFile(
        ROOT,
        ARCHES.find((a) => a !== here)!,
        '/cache',
      ),
    ).not.toBe(file);
  });

  it('refuses a lock without re2', () => {
    writeFileSync(join(work, 'package-lock.json'), JSON.stringify({ packages: {} }));
    expect(() => re2CacheFile(work, here, '/cache')).toThrow(
      new InputError('package-lock.json has no node_modules/re2: install the dependencies (npm ci)'),
    );
  });
});

describe('re2AddonFor', () => {
  const abiDiffers = process.versions.modules !== NODE.abi;

  (abiDiffers ? it : it.skip)("uses a cached build for the image's Node once it has been tried", () => {
    // node_modules' addon, loadable by this Node, stands in for a build cached earlier.
    const cached = re2CacheFile(ROOT, here, join(work, 'cache'));
    mkdirSync(join(work, 'cache'));
    copyFileSync(join(ROOT, RE2_ADDON), cached);
    expect(re2AddonFor(options())).toBe(cached);
  });

  (abiDiffers ? it : it.skip)('cannot build for another architecture: it would have to run its Node', () => {
    const other = ARCHES.find((a) => a !== here)!;
    expect(() => re2AddonFor({ ...options(), arch: other })).toThrow(
      `node_modules was installed by Node ${process.versions.node} (ABI ${process.versions.modules}) and the image ` +
        `runs Node ${NODE.version} (ABI ${NODE.abi}) on ${other.oci}: re2 can be built for it only on an ` +
        `${other.oci} machine (or install node_modules with Node ${NODE.version.split('.')[0]})`,
    );
  });

  (abiDiffers ? it.skip : it)("is node_modules' own where this Node has the image's ABI", () => {
    expect(re2AddonFor(options())).toBe(join(ROOT, RE2_ADDON));
  });
});
