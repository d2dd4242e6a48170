import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join, posix, relative } from 'node:path';
import { Arch, elfMachineName } from './arch';
import { RE2_ADDON, re2AddonFor, RE2_RUNTIME } from './addon';
import { InputError, LockedPackage, moduleClosure, productionPackages } from './closure';
import { readElf } from './elf';
import { DEBIAN_PACKAGES, DebianPackage, debianPackages, NODE, nodeTarball, unpackNode } from './sources';
import { APP_DIR, ENTRY, NODE_BINARY, RUN_AS } from './spec';

// The image's root filesystem, assembled in a folder: the same code runs for buildah here and in the Dockerfile's
// build stage, so both produce one layout:
//   /usr/local/bin/node                     Node (official binary, unmodified), its LICENSE in /usr/local/share/doc
//   /lib*/, /usr/lib/<triplet>/             only the shared libraries Node and re2.node load (from Debian packages)
//   /var/lib/dpkg/status.d/, /usr/share/doc  what those packages are, for scanners; their copyright files
//   /app/dist/                              the compiled modules `modrule` can load
//   /app/node_modules/                      production packages; of re2 only its JavaScript and the stripped addon,
//                                           built for the image's Node (image/addon.ts)
//   /etc/passwd, /etc/group                 root and nonroot (65532); /tmp (1777) for the certificate folder

/** Where the inputs come from and where the root filesystem goes. */
export interface RootfsOptions {
  /** The repository: dist/, package.json, package-lock.json, node_modules/. */
  root: string;
  /** The folder to fill; must be empty or absent. */
  out: string;
  arch: Arch;
  /** Downloads and builds kept between builds (Node's tarball, re2 built for it). */
  cacheDir: string;
  /** Scratch space for this build. */
  workDir: string;
  /** Progress of long steps. */
  log?: (line: string) => void;
}

/** What went into the image (for the build log and the release's bill of materials). */
export interface RootfsInventory {
  node: string;
  debian: { name: string; version: string }[];
  packages: LockedPackage[];
  files: number;
  bytes: number;
}

// TypeScript sources and declarations, source maps and documentation: nothing Node loads.
const DROP = /\.(?:d\.[cm]?ts|[cm]?ts|map|md|markdown)$/i;
const LEGAL = /^(?:licen[cs]e|copying|notice)/i;
const RE2_KEEP = new Set([...RE2_RUNTIME, 'build', 'build/Release']);

/** Checks what the image is built from before anything is downloaded; throws InputError saying what to do. */
export function checkInputs(root: string, arch: Arch): { dist: string[]; packages: LockedPackage[] } {
  const { files, packages: required } = moduleClosure(root, ENTRY.replace(`${APP_DIR}/`, ''));
  const packages = productionPackages(root);
  const installed = new Set(packages.map((p) => p.name));
  for (const name of required) {
    if (!installed.has(name))
      throw new InputError(`dist/ requires "${name}", which is not a production dependency in package.json`);
  }
  // What is shipped: re2's addon (not the objects its build left beside it), any other package's whole.
  const addons = [
    join(root, RE2_ADDON),
    ...packages.filter((p) => p.path !== 'node_modules/re2').flatMap((p) => nativeAddons(join(root, p.path))),
  ].filter((f) => existsSync(f));
  for (const addon of addons) {
    const { machine } = readElf(addon);
    if (machine !== arch.elfMachine)
      throw new InputError(
        `${relative(root, addon)} is built for ${elfMachineName(machine)}, the image is for ${arch.oci} ` +
          `(${arch.elfName}): install node_modules on an ${arch.oci} machine (the Dockerfile's build stage does, ` +
          'under docker buildx --platform)',
      );
  }
  // re2 is built again for the image's Node when it differs (image/addon.ts); no other addon can be.
  if (addons.some((a) => a !== join(root, RE2_ADDON)) && process.versions.modules !== NODE.abi)
    throw new InputError(
      `node_modules was installed by Node ${process.versions.node} (ABI ${process.versions.modules}); the image ` +
        `runs Node ${NODE.version} (ABI ${NODE.abi}), which cannot load its native addons: install them with Node ` +
        `${NODE.version.split('.')[0]} (npm ci)`,
    );
  if (!existsSync(join(root, RE2_ADDON)))
    throw new InputError(`${join(root, RE2_ADDON)} is missing: install the dependencies first (npm ci)`);
  return { dist: files, packages };
}

function nativeAddons(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const stat = lstatSync(path);
    if (stat.isDirectory() && name !== 'node_modules') out.push(...nativeAddons(path));
    else if (stat.isFile() && name.endsWith('.node')) out.push(path);
  }
  return out;
}

// re2 with `re2Addon` (built for the image's Node) as its addon.
function copyPackage(root: string, pkg: LockedPackage, out: string, re2Addon: string): void {
  const from = join(root, pkg.path);
  const to = join(out, APP_DIR, pkg.path);
  const isRe2 = pkg.path === 'node_modules/re2';
  cpSync(from, to, {
    recursive: true,
    verbatimSymlinks: true,
    filter: (src) => {
      const rel = relative(from, src);
      if (rel === '') return true;
      if (rel === 'node_modules' || rel.startsWith(`node_modules/`)) return false; // nested packages come on their own
      if (isRe2) return RE2_KEEP.has(rel);
      return !DROP.test(src) || LEGAL.test(basename(src)) || lstatSync(src).isDirectory();
    },
  });
  if (!isRe2) return;
  copyFileSync(re2Addon, join(out, APP_DIR, RE2_ADDON));
  // Debug information is 19 of its 20 MB.
  execFileSync('strip', ['--strip-unneeded', join(out, APP_DIR, RE2_ADDON)]);
}

function findLibrary(
  pkgs: readonly DebianPackage[],
  arch: Arch,
  soname: string,
): { root: string; path: string } {
  const dirs = [`lib/${arch.triplet}`, `usr/lib/${arch.triplet}`, 'lib', 'usr/lib'];
  for (const pkg of pkgs)
    for (const dir of dirs)
      if (existsSync(join(pkg.root, dir, soname))) return { root: pkg.root, path: join(dir, soname) };
  throw new InputError(`${soname} is in none of the Debian packages ${pkgs.map((p) => p.name).join(', ')}`);
}

// Whether a path exists, a dangling symbolic link included.
function present(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

// Copies root/path into out, and, if it is a symbolic link, what it points to (links stay links).
function copyFromPackage(root: string, path: string, out: string): string {
  const src = join(root, path);
  const dest = join(out, path);
  mkdirSync(dirname(dest), { recursive: true });
  if (!lstatSync(src).isSymbolicLink()) {
    if (!present(dest)) copyFileSync(src, dest);
    return src;
  }
  const link = readlinkSync(src);
  if (!present(dest)) symlinkSync(link, dest);
  const target = link.startsWith('/') ? link.slice(1) : posix.join(posix.dirname(path), link);
  return copyFromPackage(root, target, out);
}

// The loader and every library needed by `binaries`, transitively.
function copyLibraries(
  binaries: readonly string[],
  pkgs: readonly DebianPackage[],
  arch: Arch,
  out: string,
): void {
  const done = new Set<string>();
  const queue = [...binaries];
  while (queue.length > 0) {
    const file = queue.pop()!;
    const elf = readElf(file);
    if (elf.interpreter && !done.has(elf.interpreter)) {
      done.add(elf.interpreter);
      const pkg = pkgs.find((p) => existsSync(join(p.root, elf.interpreter!)));
      if (!pkg) throw new InputError(`the loader ${elf.interpreter} of ${file} is in no Debian package`);
      copyFromPackage(pkg.root, elf.interpreter.slice(1), out);
    }
    for (const soname of elf.needed) {
      if (done.has(soname)) continue;
      done.add(soname);
      const lib = findLibrary(pkgs, arch, soname);
      queue.push(copyFromPackage(lib.root, lib.path, out));
    }
  }
}

// Package records as distroless keeps them, so image scanners know the libraries' versions; and their copyrights.
function recordPackages(pkgs: readonly DebianPackage[], docs: readonly DebianPackage[], out: string): void {
  mkdirSync(join(out, 'var/lib/dpkg/status.d'), { recursive: true });
  for (const pkg of pkgs) {
    writeFileSync(join(out, 'var/lib/dpkg/status.d', pkg.name), pkg.control);
    const doc = join(pkg.root, 'usr/share/doc', pkg.name);
    const owner = lstatSync(doc).isSymbolicLink()
      ? docs.find((d) => d.name === basename(readlinkSync(doc)))
      : pkg;
    const copyright = owner && join(owner.root, 'usr/share/doc', owner.name, 'copyright');
    if (!copyright || !existsSync(copyright))
      throw new InputError(`no copyright file for Debian package ${pkg.name}`);
    mkdirSync(join(out, 'usr/share/doc', pkg.name), { recursive: true });
    copyFileSync(copyright, join(out, 'usr/share/doc', pkg.name, 'copyright'));
  }
}

// Packages whose doc folder is a link to another package's (libstdc++6 -> gcc-12-base): where the copyright is.
function docOwners(pkgs: readonly DebianPackage[]): string[] {
  const owners = pkgs.flatMap((p) => {
    const doc = join(p.root, 'usr/share/doc', p.name);
    return present(doc) && lstatSync(doc).isSymbolicLink() ? [basename(readlinkSync(doc))] : [];
  });
  return [...new Set(owners)];
}

function usersAndTmp(out: string): void {
  mkdirSync(join(out, 'etc'), { recursive: true });
  const [uid, gid] = RUN_AS.split(':');
  writeFileSync(
    join(out, 'etc/passwd'),
    `root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:${uid}:${gid}:nonroot:/home/nonroot:/sbin/nologin\n`,
  );
  writeFileSync(join(out, 'etc/group'), `root:x:0:\nnonroot:x:${gid}:\n`);
  mkdirSync(join(out, 'tmp'));
  chmodSync(join(out, 'tmp'), 0o1777);
}

function measure(dir: string): { files: number; bytes: number } {
  let files = 0;
  let bytes = 0;
  for (const name of readdirSync(dir)) {
    const stat = lstatSync(join(dir, name));
    if (stat.isDirectory()) {
      const inner = measure(join(dir, name));
      files += inner.files;
      bytes += inner.bytes;
    } else {
      files++;
      bytes += stat.size;
    }
  }
  return { files, bytes };
}

/** Fills options.out with the image's root filesystem; throws InputError or SourceError before it starts copying. */
export function assembleRootfs(options: RootfsOptions): RootfsInventory {
  const { root, out, arch } = options;
  const { dist, packages } = checkInputs(root, arch);
  if (existsSync(out) && readdirSync(out).length > 0) throw new InputError(`${out} is not empty`);
  mkdirSync(options.workDir, { recursive: true });
  const node = unpackNode(nodeTarball(arch, options.cacheDir), options.workDir);
  const nodeElf = readElf(node.node);
  if (nodeElf.machine !== arch.elfMachine)
    throw new InputError(`${node.node} is built for ${elfMachineName(nodeElf.machine)}, not ${arch.elfName}`);
  const re2 = re2AddonFor({ ...options, node });
  const debs = debianPackages(DEBIAN_PACKAGES, arch, join(options.workDir, 'debian'));
  const owners = docOwners(debs).filter((n) => !debs.some((d) => d.name === n));
  const docs = owners.length > 0 ? debianPackages(owners, arch, join(options.workDir, 'debian-docs')) : [];

  mkdirSync(out, { recursive: true });
  for (const file of dist) {
    mkdirSync(dirname(join(out, APP_DIR, file)), { recursive: true });
    copyFileSync(join(root, file), join(out, APP_DIR, file));
  }
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Record<string, unknown>;
  const { name, version, description, license } = pkg;
  writeFileSync(
    join(out, APP_DIR, 'package.json'),
    `${JSON.stringify({ name, version, description, license, private: true }, null, 2)}\n`,
  );
  for (const p of packages) copyPackage(root, p, out, re2);
  mkdirSync(join(out, dirname(NODE_BINARY.slice(1))), { recursive: true });
  copyFileSync(node.node, join(out, NODE_BINARY.slice(1)));
  chmodSync(join(out, NODE_BINARY.slice(1)), 0o755);
  mkdirSync(join(out, 'usr/local/share/doc/node'), { recursive: true });
  copyFileSync(node.license, join(out, 'usr/local/share/doc/node/LICENSE'));
  copyLibraries([node.node, re2], debs, arch, out);
  recordPackages(debs, docs, out);
  usersAndTmp(out);
  const size = measure(out);
  if (!statSync(join(out, ENTRY.slice(1))).isFile()) throw new InputError(`${ENTRY} is missing from ${out}`);
  return {
    node: NODE.version,
    debian: debs.map((d) => ({ name: d.name, version: d.version })),
    packages,
    ...size,
  };
}
