// The real Helm binaries for tests: Helm 3 and Helm 4 (CI: 3.22 and 4.3) as helm3 and helm4 in MODRULE_HELM_BIN,
// default /tmp/modrule-helm/bin (a release's helm binary from https://helm.sh/docs/intro/install/, renamed). Each Helm gets its own config, cache and data folders, so
// plugins and repositories never leak between tests or into the user's ~/.config/helm.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessResult, runProcess } from '../cli';

export const ROOT = join(__dirname, '..', '..');
export const PLUGIN_DIR = join(ROOT, 'helm-plugin', 'modrule');
export const FIXTURE_CHARTS = join(ROOT, 'fixtures', 'charts');

const configured = process.env.MODRULE_HELM_BIN;
const HOW_TO_GET =
  'install Helm 3 and Helm 4 from https://helm.sh/docs/intro/install/ and name them helm3 and helm4';
const BIN_DIR = configured || '/tmp/modrule-helm/bin';

/** One Helm binary and the environment it runs in. */
export interface Helm {
  major: 3 | 4;
  /** The binary, e.g. /tmp/modrule-helm/bin/helm4. */
  bin: string;
  /** HELM_CONFIG_HOME, HELM_CACHE_HOME, HELM_DATA_HOME in a folder of their own, and anything added. */
  env: Record<string, string>;
}

/** Whether both binaries are there; throws when CI named a folder that lacks them (CI must run these tests). */
export function helmAvailable(): boolean {
  const found = ['helm3', 'helm4'].every((b) => existsSync(join(BIN_DIR, b)));
  if (!found && configured)
    throw new Error(`MODRULE_HELM_BIN=${configured} has no helm3 and helm4 (${HOW_TO_GET})`);
  return found;
}

/** Why Helm tests are skipped, printed once (jest shows the suite as skipped). */
export function skipNotice(): void {
  process.stderr.write(
    `helm: no helm3/helm4 in ${BIN_DIR}; skipping the tests with the real Helm binaries ` +
      `(${HOW_TO_GET}, or point MODRULE_HELM_BIN at a folder holding them)\n`,
  );
}

/** A Helm of the given major with fresh, empty homes. */
export function newHelm(major: 3 | 4, extraEnv: Record<string, string> = {}): Helm {
  const home = mkdtempSync(join(tmpdir(), `modrule-helm${major}-`));
  return {
    major,
    bin: join(BIN_DIR, `helm${major}`),
    env: {
      HELM_CONFIG_HOME: join(home, 'config'),
      HELM_CACHE_HOME: join(home, 'cache'),
      HELM_DATA_HOME: join(home, 'data'),
      ...extraEnv,
    },
  };
}

// Helm's stderr goes through a pipe, as in a shell or a CI job: Node would give it a socket, which the plugin's
// workaround for Helm 4 dropping plugin stderr cannot write to (see helm-plugin/modrule/post-renderer).
const STDERR_THROUGH_PIPE = 'set -o pipefail; { "$0" "$@" 2>&1 1>&3 3>&- | cat >&2; } 3>&1';

/** Runs `helm args...` with modrule and modrule-post-renderer on PATH (from the sources). */
export function helm(
  h: Helm,
  args: readonly string[],
  options: { stdin?: string } = {},
): Promise<ProcessResult> {
  return runProcess('bash', ['-c', STDERR_THROUGH_PIPE, h.bin, ...args], {
    env: h.env,
    stdin: options.stdin,
  });
}

/**
 * A post-renderer that changes nothing (`cat`), as Helm runs one: shows what Helm itself does to every
 * post-renderer's output (Helm 4 re-serialises it). Returns the flags that select it.
 */
export async function identityPostRenderer(h: Helm): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'modrule-identity-'));
  const script = join(dir, 'identity', 'identity');
  mkdirSync(join(dir, 'identity'));
  writeFileSync(script, '#!/bin/sh\nexec cat\n');
  chmodSync(script, 0o755);
  if (h.major === 3) return ['--post-renderer', script];
  writeFileSync(
    join(dir, 'identity', 'plugin.yaml'),
    'apiVersion: v1\nname: identity\ntype: postrenderer/v1\nruntime: subprocess\nversion: 0.1.0\n' +
      'runtimeConfig:\n  platformCommand:\n    - command: ${HELM_PLUGIN_DIR}/identity\n',
  );
  const r = await helm(h, ['plugin', 'install', join(dir, 'identity')]);
  if (r.code !== 0) throw new Error(`helm plugin install identity: ${r.stderr}`);
  return ['--post-renderer', 'identity'];
}

/**
 * The arguments that make `modrule` the post-renderer, the same --post-renderer-args for both majors: Helm 4 names
 * the installed plugin, Helm 3 the executable.
 */
export function postRenderer(h: Helm, ...args: string[]): string[] {
  const renderer = h.major === 4 ? 'modrule' : 'modrule-post-renderer';
  return ['--post-renderer', renderer, ...args.flatMap((a) => ['--post-renderer-args', a])];
}

/** A Helm ready to post-render: Helm 4 gets the plugin installed from helm-plugin/modrule. */
export async function postRenderingHelm(major: 3 | 4, extraEnv: Record<string, string> = {}): Promise<Helm> {
  const h = newHelm(major, extraEnv);
  if (major === 4) {
    const r = await helm(h, ['plugin', 'install', PLUGIN_DIR]);
    if (r.code !== 0) throw new Error(`helm plugin install ${PLUGIN_DIR}: ${r.stderr}`);
  }
  return h;
}
