import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Arch } from './arch';
import { ENTRYPOINT, ENV, ociLabels, PORTS, RUN_AS, APP_DIR } from './spec';

// Builds the image from an assembled root filesystem with buildah: `from scratch`, one layer, the configuration of
// image/spec.ts. No RUN step, so no container is ever started (podman/buildah run is refused on some hosts).

/** How buildah is told to build. */
export interface BuildahOptions {
  rootfs: string;
  image: string;
  arch: Arch;
  labels: { version: string; revision: string; source: string };
  /** Seconds since the epoch for the image's and its files' times (the commit's time: reproducible digests). */
  timestamp: number;
  /** Also write the image as an OCI archive here. */
  ociArchive?: string;
  /** Global flags, e.g. a private --root/--runroot and --storage-driver for tests. */
  globalFlags?: string[];
}

/** The buildah command lines for `options`, in order (each a list of arguments after `buildah`). */
export function buildahCommands(options: BuildahOptions, container: string): string[][] {
  const g = options.globalFlags ?? [];
  const config = [
    'config',
    `--user=${RUN_AS}`,
    `--workingdir=${APP_DIR}`,
    `--entrypoint=${JSON.stringify(ENTRYPOINT)}`,
    '--os=linux',
    `--arch=${options.arch.oci}`,
    ...Object.entries(ENV).map(([k, v]) => `--env=${k}=${v}`),
    ...PORTS.map((p) => `--port=${p}/tcp`),
    ...Object.entries(ociLabels(options.labels)).flatMap(([k, v]) => [
      `--label=${k}=${v}`,
      `--annotation=${k}=${v}`,
    ]),
    container,
  ];
  const commands = [
    [...g, 'from', `--name=${container}`, `--arch=${options.arch.oci}`, 'scratch'],
    [...g, 'copy', container, `${options.rootfs}/`, '/'],
    [...g, ...config],
    [...g, 'commit', '--format=oci', `--timestamp=${options.timestamp}`, '--rm', container, options.image],
  ];
  if (options.ociArchive)
    commands.push([...g, 'push', options.image, `oci-archive:${options.ociArchive}:${options.image}`]);
  return commands;
}

/** Runs the build; returns the image id. Removes the working container if a step fails. */
export function buildWithBuildah(
  options: BuildahOptions,
  log: (line: string) => void = () => undefined,
): string {
  const container = `modrule-build-${randomBytes(4).toString('hex')}`;
  const buildah = (args: string[]) => {
    log(`buildah ${args.join(' ')}`);
    return execFileSync('buildah', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  };
  let id = '';
  try {
    for (const args of buildahCommands(options, container)) {
      const out = buildah(args);
      if (args.includes('commit')) id = out.split('\n').pop() ?? '';
    }
  } catch (err) {
    try {
      execFileSync('buildah', [...(options.globalFlags ?? []), 'rm', container], { stdio: 'ignore' });
    } catch {
      // already removed, or never created
    }
    throw err;
  }
  return id;
}
