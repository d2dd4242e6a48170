// The image's configuration, in one place: buildah sets it from here and image/dockerfile.test.ts holds the
// Dockerfile to the same values, so both builds produce the same image.

/** Where the application lives in the image. */
export const APP_DIR = '/app';
/** The Node binary. */
export const NODE_BINARY = '/usr/local/bin/node';
/** `modrule` itself; the bundle's Deployment passes `operator` as its argument. */
export const ENTRY = `${APP_DIR}/dist/cli/main.js`;
export const ENTRYPOINT = [NODE_BINARY, ENTRY];
/** Numeric, so the kubelet can check runAsNonRoot; matches runAsUser in config/manager/deployment.yaml. */
export const RUN_AS = '65532:65532';
export const ENV: Readonly<Record<string, string>> = { NODE_ENV: 'production' };
/** Webhook (HTTPS) and metrics/probes (HTTP): the operator's defaults. */
export const PORTS = [9443, 8081];
/** Where the project's source lives (org.opencontainers.image.source); the release workflow passes its own. */
export const DEFAULT_SOURCE = 'https://github.com/modrule/modrule';

/** The OCI annotations/labels every build sets. */
export function ociLabels(values: {
  version: string;
  revision: string;
  source: string;
}): Record<string, string> {
  return {
    'org.opencontainers.image.title': 'modrule',
    'org.opencontainers.image.description': 'A drop-in, faster and safer successor to KubeMod',
    'org.opencontainers.image.licenses': 'Apache-2.0',
    'org.opencontainers.image.source': values.source,
    'org.opencontainers.image.version': values.version,
    'org.opencontainers.image.revision': values.revision,
  };
}
