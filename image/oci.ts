import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

// Reads an OCI image archive (as `buildah push ... oci-archive:` writes it): its configuration, its layers' sizes,
// and its root filesystem unpacked into a folder, so a test can run what is really in the image.

/** The parts of an OCI image configuration the tests look at. */
export interface OciConfig {
  architecture: string;
  os: string;
  config: {
    User?: string;
    Env?: string[];
    Entrypoint?: string[];
    Cmd?: string[] | null;
    WorkingDir?: string;
    ExposedPorts?: Record<string, unknown>;
    Labels?: Record<string, string>;
  };
}

/** An unpacked OCI archive. */
export interface UnpackedImage {
  config: OciConfig;
  /** Compressed bytes of all layers (what a registry stores and a node pulls). */
  layerBytes: number;
  rootfs: string;
}

interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
}

function blob(dir: string, digest: string): string {
  const [algorithm, hex] = digest.split(':');
  return join(dir, 'blobs', algorithm, hex);
}

/** Unpacks `archive` into `dir` (dir/layout: the archive, dir/rootfs: the root filesystem). */
export function unpackOciArchive(archive: string, dir: string): UnpackedImage {
  const layout = join(dir, 'layout');
  const rootfs = join(dir, 'rootfs');
  mkdirSync(layout, { recursive: true });
  mkdirSync(rootfs, { recursive: true });
  execFileSync('tar', ['-xf', archive, '-C', layout]);
  const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as { manifests: Descriptor[] };
  if (index.manifests.length !== 1)
    throw new Error(`${archive}: expected one image, found ${index.manifests.length}`);
  const manifest = JSON.parse(readFileSync(blob(layout, index.manifests[0].digest), 'utf8')) as {
    config: Descriptor;
    layers: Descriptor[];
  };
  const config = JSON.parse(readFileSync(blob(layout, manifest.config.digest), 'utf8')) as OciConfig;
  let layerBytes = 0;
  for (const layer of manifest.layers) {
    const file = blob(layout, layer.digest);
    layerBytes += statSync(file).size;
    const gzip = layer.mediaType.endsWith('+gzip');
    // --same-owner and permissions as recorded: root-owned files, /tmp 1777, as a container runtime unpacks them.
    execFileSync('tar', [gzip ? '-xzpf' : '-xpf', file, '--same-owner', '--numeric-owner', '-C', rootfs]);
  }
  return { config, layerBytes, rootfs };
}
