import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parsePinnedImage } from '../bundle/image';
import { re2AddonFor } from './addon';
import { archOf } from './arch';
import { buildWithBuildah } from './buildah';
import { assembleRootfs, RootfsInventory } from './rootfs';
import { nodeTarball, unpackNode } from './sources';
import { DEFAULT_SOURCE } from './spec';
import { messageOf } from '../util/errors';

const USAGE = `usage:
  node dist/image/main.js build --image REF [--builder auto|buildah|docker] [--oci-archive FILE] [--arch ARCH]
                                [--source URL] [--storage-root DIR]
      builds the image: with Docker (the Dockerfile) where a Docker engine answers, else with buildah (here)
  node dist/image/main.js rootfs --out DIR [--arch ARCH]
      only assembles the root filesystem (the Dockerfile's build stage runs this)
  node dist/image/main.js runtime --out DIR
      the image's Node in DIR (bin/node) and re2 built for it (DIR/re2.node): to run the tests on that Node
ARCH: amd64 or arm64 (default: this machine's). REF must name a tag or a digest. Downloads and builds are kept in
$MODRULE_IMAGE_CACHE (default $XDG_CACHE_HOME/modrule/image).`;

/** A usage mistake: printed with the usage. */
class UsageError extends Error {}

// The repository: above image/ when run by ts-jest, above dist/image/ when compiled.
const ROOT = existsSync(join(__dirname, '..', 'package.json'))
  ? resolve(__dirname, '..')
  : resolve(__dirname, '..', '..');

function cacheDir(): string {
  if (process.env.MODRULE_IMAGE_CACHE) return resolve(process.env.MODRULE_IMAGE_CACHE);
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'modrule', 'image');
}

const log = (line: string) => process.stderr.write(`${line}\n`);

function git(args: string[]): string | undefined {
  try {
    return execFileSync('git', args, {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return undefined;
  }
}

/** The commit (with -dirty when the work tree has changes) and its time, for labels and reproducible timestamps. */
export function revision(): { revision: string; timestamp: number } {
  const commit = git(['rev-parse', 'HEAD']) ?? 'unknown';
  const dirty = git(['status', '--porcelain', '--untracked-files=no']);
  const epoch = Number(process.env.SOURCE_DATE_EPOCH || git(['log', '-1', '--format=%ct']) || 0);
  return { revision: dirty ? `${commit}-dirty` : commit, timestamp: epoch };
}

function succeeds(command: string, args: string[]): boolean {
  try {
    execFileSync(command, args, { stdio: 'ignore', timeout: 15_000 });
    return true;
  } catch {
    return false;
  }
}

/** docker if a Docker engine answers (`docker info`: a client alone is not enough), else buildah if installed. */
export function pickBuilder(wanted: string): 'docker' | 'buildah' {
  if (wanted === 'docker' || wanted === 'buildah') return wanted;
  if (wanted !== 'auto') throw new UsageError(`--builder must be auto, buildah or docker, not "${wanted}"`);
  if (succeeds('docker', ['info'])) return 'docker';
  if (succeeds('buildah', ['--version'])) return 'buildah';
  throw new Error(
    'no Docker engine answers (docker info) and buildah is not installed: apt-get install buildah',
  );
}

function summary(inventory: RootfsInventory): string {
  const mb = (inventory.bytes / 1e6).toFixed(1);
  return (
    `root filesystem: ${inventory.files} files, ${mb} MB; Node ${inventory.node}; ` +
    `${inventory.debian.map((d) => `${d.name} ${d.version}`).join(', ')}; ${inventory.packages.length} npm packages`
  );
}

function rootfs(args: string[]): number {
  const { values } = parseArgs({ args, options: { out: { type: 'string' }, arch: { type: 'string' } } });
  if (!values.out) throw new UsageError('rootfs needs --out DIR');
  const work = mkdtempSync(join(tmpdir(), 'modrule-image-'));
  try {
    const arch = archOf(values.arch ?? process.arch);
    const inventory = assembleRootfs({
      root: ROOT,
      out: resolve(values.out),
      arch,
      cacheDir: cacheDir(),
      workDir: work,
      log,
    });
    process.stderr.write(`${summary(inventory)}\n`);
    return 0;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

function build(args: string[]): number {
  const { values } = parseArgs({
    args,
    options: {
      image: { type: 'string' },
      builder: { type: 'string', default: 'auto' },
      'oci-archive': { type: 'string' },
      arch: { type: 'string' },
      source: { type: 'string', default: DEFAULT_SOURCE },
      'storage-root': { type: 'string' },
    },
  });
  if (!values.image) throw new UsageError('build needs --image REF');
  parsePinnedImage(values.image);
  const arch = archOf(values.arch ?? process.arch);
  const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string })
    .version;
  const { revision: rev, timestamp } = revision();
  const labels = { version, revision: rev, source: values.source };
  if (pickBuilder(values.builder) === 'docker') {
    if (values['oci-archive'])
      throw new UsageError('--oci-archive needs --builder buildah (with Docker: docker save)');
    const buildArgs = Object.entries({ VERSION: version, REVISION: rev, SOURCE: values.source }).flatMap(
      ([k, v]) => ['--build-arg', `${k}=${v}`],
    );
    execFileSync(
      'docker',
      ['build', '--platform', `linux/${arch.oci}`, ...buildArgs, '-t', values.image, ROOT],
      {
        stdio: 'inherit',
      },
    );
    return 0;
  }
  const work = mkdtempSync(join(tmpdir(), 'modrule-image-'));
  try {
    const out = join(work, 'rootfs');
    const inventory = assembleRootfs({
      root: ROOT,
      out,
      arch,
      cacheDir: cacheDir(),
      workDir: join(work, 'sources'),
      log,
    });
    process.stderr.write(`${summary(inventory)}\n`);
    const storage = values['storage-root'];
    const globalFlags = storage
      ? [`--root=${join(storage, 'root')}`, `--runroot=${join(storage, 'run')}`, '--storage-driver=vfs']
      : [];
    const id = buildWithBuildah(
      {
        rootfs: out,
        image: values.image,
        arch,
        labels,
        timestamp,
        ociArchive: values['oci-archive'],
        globalFlags,
      },
      (line) => process.stderr.write(`${line}\n`),
    );
    process.stderr.write(
      `built ${values.image} (${id})${values['oci-archive'] ? `, archive ${values['oci-archive']}` : ''}\n`,
    );
    return 0;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

// The image's Node and re2 for it, outside the image: .ci/unit-on-image-node runs the unit suite with them.
function runtime(args: string[]): number {
  const { values } = parseArgs({ args, options: { out: { type: 'string' } } });
  if (!values.out) throw new UsageError('runtime needs --out DIR');
  const out = resolve(values.out);
  mkdirSync(out, { recursive: true });
  const arch = archOf(process.arch);
  const node = unpackNode(nodeTarball(arch, cacheDir()), out);
  const re2 = re2AddonFor({ root: ROOT, node, arch, cacheDir: cacheDir(), workDir: out, log });
  copyFileSync(re2, join(out, 're2.node'));
  process.stdout.write(`${node.node}\n`);
  return 0;
}

/** `node dist/image/main.js build|rootfs|runtime ...`; returns the exit code (1: the build failed, 2: usage). */
export function main(argv: readonly string[]): number {
  const [command, ...args] = argv;
  try {
    if (command === 'build') return build(args);
    if (command === 'rootfs') return rootfs(args);
    if (command === 'runtime') return runtime(args);
    throw new UsageError(command ? `unknown command "${command}"` : 'no command');
  } catch (err) {
    const usage = err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    process.stderr.write(`image: ${messageOf(err)}\n${usage ? `${USAGE}\n` : ''}`);
    return usage ? 2 : 1;
  }
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));
