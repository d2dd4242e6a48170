import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Arch } from './arch';
import { messageOf } from '../util/errors';

// What the image is assembled from besides this repository: Node's official Linux binary, as the npm registry ships
// it (package node-linux-<arch>, pinned by version and integrity), and the C/C++ runtime libraries Node and the re2
// addon load, from the build machine's Debian (or Ubuntu) archive.

/**
 * The Node release the image runs: the current LTS line (24, 'Krypton'), which has a per-thread CPU clock
 * (util/cpu-clock.ts). Its ABI (process.versions.modules) is the one re2's addon is built for (image/addon.ts).
 */
export const NODE = {
  version: '24.22.3',
  abi: '137',
  integrity: {
    x64: 'sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA==',
    arm64: 'sha512-IZx0J52/1NDwAsY2iyWR9nlPIYuYviTWetjj8+ElvYQh2+XRhLfCfkbFEF/2O5vGI2hcUbyPNHV+nz342FbJXw==',
  } as Record<Arch['node'], string>,
} as const;

/** Debian packages whose shared libraries Node and re2.node load (only the files they need are kept). */
export const DEBIAN_PACKAGES = ['libc6', 'libstdc++6', 'libgcc-s1'] as const;

/** A source could not be had or did not check out. */
export class SourceError extends Error {}

function run(command: string, args: string[], cwd: string): string {
  try {
    return execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new SourceError(`${command} ${args.join(' ')} failed: ${(e.stderr || e.message).trim()}`);
  }
}

function integrityOf(file: string): string {
  return `sha512-${createHash('sha512').update(readFileSync(file)).digest('base64')}`;
}

/** The npm tarball of Node for `arch`, from `cacheDir` or the registry; checked against the pinned integrity. */
export function nodeTarball(arch: Arch, cacheDir: string): string {
  const pkg = `node-linux-${arch.node}`;
  const file = join(cacheDir, `${pkg}-${NODE.version}.tgz`);
  const expected = NODE.integrity[arch.node];
  if (existsSync(file) && integrityOf(file) === expected) return file;
  mkdirSync(cacheDir, { recursive: true });
  const temp = mkdtempSync(join(cacheDir, '.download-'));
  try {
    run('npm', ['pack', `${pkg}@${NODE.version}`, '--silent', '--pack-destination', temp], temp);
    const got = join(temp, `${pkg}-${NODE.version}.tgz`);
    if (!existsSync(got)) throw new SourceError(`npm pack ${pkg}@${NODE.version} wrote no ${got}`);
    const integrity = integrityOf(got);
    if (integrity !== expected)
      throw new SourceError(
        `${pkg}@${NODE.version} has integrity ${integrity}, expected the pinned ${expected}`,
      );
    renameSync(got, file);
    return file;
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
}

/** Node unpacked from its npm package: the binary, its licence, and the folder holding include/node (headers). */
export interface UnpackedNode {
  node: string;
  license: string;
  /** What node-gyp takes as --nodedir: bin/node and include/node inside. */
  dir: string;
}

/** Unpacks bin/node, LICENSE and the headers of a node-linux-* tarball into `dir` (as dir/package/...). */
export function unpackNode(tarball: string, dir: string): UnpackedNode {
  run('tar', ['-xzf', tarball, '-C', dir, 'package/bin/node', 'package/LICENSE', 'package/include'], dir);
  const root = join(dir, 'package');
  return { node: join(root, 'bin/node'), license: join(root, 'LICENSE'), dir: root };
}

/** One downloaded Debian package: its control fields and where its files were unpacked. */
export interface DebianPackage {
  name: string;
  version: string;
  /** The package's control file, as `dpkg-deb -f` prints it (recorded in the image for scanners). */
  control: string;
  root: string;
}

/** Downloads `names` for `arch` with apt-get and unpacks each into its own folder under `dir`. */
export function debianPackages(names: readonly string[], arch: Arch, dir: string): DebianPackage[] {
  const debs = join(dir, 'debs');
  mkdirSync(debs, { recursive: true });
  try {
    run('apt-get', ['download', ...names.map((n) => `${n}:${arch.oci}`)], debs);
  } catch (err) {
    throw new SourceError(
      `${messageOf(err)}\n(the image takes its C/C++ runtime libraries from the build machine's Debian or ` +
        `Ubuntu archive: run apt-get update first${arch.oci === hostDebianArch() ? '' : `, and dpkg --add-architecture ${arch.oci}`})`,
    );
  }
  const files = readdirSync(debs).filter((f) => f.endsWith('.deb'));
  return names.map((name) => {
    const deb = files.find((f) => f.startsWith(`${name}_`));
    if (!deb) throw new SourceError(`apt-get download ${name}:${arch.oci} left no ${name}_*.deb in ${debs}`);
    const root = join(dir, name);
    mkdirSync(root);
    run('dpkg-deb', ['-x', join(debs, deb), root], dir);
    const control = run('dpkg-deb', ['-f', join(debs, deb)], dir);
    const version = /^Version: (.+)$/m.exec(control)?.[1] ?? '';
    return { name, version, control, root };
  });
}

function hostDebianArch(): string {
  try {
    return execFileSync('dpkg', ['--print-architecture'], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}
