import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { isJsonObject, JsonObject } from '../util/json';

// The release workflow pushes an image and publishes a bundle.yaml naming it: the image it pushes for a version tag
// must be the one this repository's bundle.yaml and config/default name for that version, so that the README's
// `kubectl apply -f bundle.yaml` pulls what the release published. Its steps are run here with bash as GitHub runs
// them (bash -eo pipefail), on the values GitHub would give them.

const ROOT = join(__dirname, '..');
const workflow = parse(readFileSync(join(ROOT, '.github', 'workflows', 'release.yml'), 'utf8')) as JsonObject;
const steps = ((workflow.jobs as JsonObject).release as JsonObject).steps as JsonObject[];
const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

// The repository the release runs in: the one the plugin and the docs name.
const plugin = parse(readFileSync(join(ROOT, 'helm-plugin', 'modrule', 'plugin.yaml'), 'utf8')) as JsonObject;
const repository = new URL(String(plugin.sourceURL)).pathname.slice(1);

function step(name: RegExp): string {
  const found = steps.find((s) => name.test(String(s.name)));
  if (!found || typeof found.run !== 'string') throw new Error(`release.yml has no step ${String(name)}`);
  return found.run;
}

/** Runs a step's script as GitHub does; its exit status and what it wrote to GITHUB_OUTPUT. */
function runStep(
  script: string,
  env: Record<string, string>,
): { status: number; outputs: Record<string, string> } {
  const output = join(mkdtempSync(join(tmpdir(), 'modrule-release-')), 'output');
  execFileSync('touch', [output]);
  const r = spawnSync('bash', ['--noprofile', '--norc', '-eo', 'pipefail', '-c', script], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', GITHUB_OUTPUT: output, ...env },
    encoding: 'utf8',
  });
  const outputs: Record<string, string> = {};
  for (const line of readFileSync(output, 'utf8').split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) outputs[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return { status: r.status ?? -1, outputs };
}

const deploymentImage = (): string => {
  const docs = parseAllDocuments(readFileSync(join(ROOT, 'bundle.yaml'), 'utf8')).map(
    (d) => d.toJS() as unknown,
  );
  const deployment = docs.find((d): d is JsonObject => isJsonObject(d) && d.kind === 'Deployment')!;
  const pod = ((deployment.spec as JsonObject).template as JsonObject).spec as JsonObject;
  return String((pod.containers as JsonObject[])[0].image);
};

describe('the release workflow and the bundle', () => {
  const tag = `v${version}`;

  it("runs on a version tag that must be package.json's version", () => {
    const check = step(/tag is package.json's version/);
    expect(runStep(check, { VERSION: tag }).status).toBe(0);
    expect(runStep(check, { VERSION: 'v9.9.9' }).status).not.toBe(0);
  });

  it('pushes the image this bundle.yaml and config/default name for that version', () => {
    const { status, outputs } = runStep(step(/^Image name$/), {
      VERSION: tag,
      GITHUB_REPOSITORY: repository,
    });
    expect(status).toBe(0);
    expect(outputs.image).toBe(`ghcr.io/${repository}:${version}`);
    expect(deploymentImage()).toBe(outputs.image);
    const kustomization = parse(
      readFileSync(join(ROOT, 'config', 'default', 'kustomization.yaml'), 'utf8'),
    ) as {
      images: Array<{ newName: string; newTag: string }>;
    };
    expect(`${kustomization.images[0].newName}:${kustomization.images[0].newTag}`).toBe(outputs.image);
  });

  it('lower-cases the repository (an image name must be lower case) and builds the bundle from that image', () => {
    const { outputs } = runStep(step(/^Image name$/), { VERSION: tag, GITHUB_REPOSITORY: 'ModRule/ModRule' });
    expect(outputs.image).toBe(`ghcr.io/modrule/modrule:${version}`);
    expect(step(/bundle.yaml naming the pushed image/)).toContain(
      'make bundle IMAGE="${{ steps.name.outputs.image }}@${{ steps.build.outputs.digest }}"',
    );
  });
});
