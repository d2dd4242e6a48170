import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { JsonObject } from '../util/json';
import { run as apply, ApplyVerdict } from './apply';
import { run as postRender } from './post-render';
import { splitYamlStream } from '../util/yaml-stream';
import { EXIT } from './exit';
import { runCommand } from './testing';

// The evidence through the CLI: `modrule apply` of the Pod rules of examples/pod-controllers (a sidecar
// appended with /spec/containers/-, a label, a Reject for containers without limits) on every controller kind and
// bare pods, the Docker Hub mirror of examples/images applied twice, and the Helm post-renderer on a chart.

const ROOT = join(__dirname, '..');
const PODS = join(ROOT, 'examples', 'pod-controllers');
const IMAGES = join(ROOT, 'examples', 'images');

const verdictsOf = (stdout: string) => JSON.parse(stdout) as ApplyVerdict[];
const docs = (text: string) => parseAllDocuments(text).map((d) => d.toJS() as JsonObject);

/** The path of each `add` of a verdict's patch, in order. */
const added = (v: ApplyVerdict) =>
  (v.patch as JsonObject[]).filter((op) => op.op === 'add').map((op) => String(op.path));

describe('modrule apply with spec.podControllers', () => {
  const args = ['--rules', join(PODS, 'rules.yaml'), '--file', join(PODS, 'input.yaml')];

  it('patches every controller at its template depth and a bare pod at its own, and refuses the unlimited one', async () => {
    const r = await runCommand(apply, [...args, '--output', 'json']);
    expect(r.code).toBe(EXIT.finding); // one rejection
    const byName = new Map(verdictsOf(r.stdout).map((v) => [`${v.kind}/${v.name}`, v]));
    const template = '/spec/template';
    const depth: Record<string, string> = {
      'Deployment/web': template,
      'StatefulSet/db': template,
      'DaemonSet/node-agent': template,
      'Job/migrate': template,
      'CronJob/report': '/spec/jobTemplate/spec/template',
      'Pod/debug': '',
    };
    for (const [object, at] of Object.entries(depth)) {
      const v = byName.get(object);
      expect([object, v?.allowed, v?.rules]).toEqual([object, true, ['shop/log-agent']]);
      // The sidecar and the label land where the pod's spec and labels are, and nowhere else.
      expect(added(v!)).toEqual(
        expect.arrayContaining([`${at}/spec/containers/1`, `${at}/metadata/labels/logging`]),
      );
      expect(added(v!).every((p) => p.startsWith(at))).toBe(true);
    }
    // A pod made from the Deployment's patched template (its marker) is not patched again: one sidecar.
    const replica = byName.get('Pod/web-6d9f7c8b5-k2x7q');
    expect([replica?.allowed, replica?.patch]).toEqual([true, []]);
    const unlimited = byName.get('Deployment/unlimited');
    expect([unlimited?.allowed, unlimited?.message]).toEqual([
      false,
      'shop/require-limits: set resources.limits on every container of unlimited',
    ]);
  });

  it('--explain names each variant by its controller kind', async () => {
    const r = await runCommand(apply, [...args, '--output', 'json', '--explain']);
    const cron = verdictsOf(r.stdout).find((v) => v.kind === 'CronJob');
    const matched = cron?.explanation?.rules.filter((x) => x.status === 'matched').map((x) => x.rule);
    expect(matched).toEqual(['shop/log-agent (CronJob)']);
    const text = await runCommand(apply, [...args, '--explain']);
    expect(text.stderr).toContain('shop/log-agent (CronJob) [Patch, tier 0]: matched');
    expect(text.stderr).toContain('shop/require-limits (Deployment) [Reject, tier 0]: matched');
  });
});

describe('modrule apply of the image rules', () => {
  it('rewrites Docker Hub images to the mirror once: applied to its own output, it changes nothing', async () => {
    const rules = ['--rules', join(IMAGES, 'rules.yaml')];
    const once = await runCommand(apply, [...rules, '--file', join(IMAGES, 'input.yaml')]);
    const pod = docs(once.stdout).find((d) => d.kind === 'Pod') as JsonObject;
    const images = (list: string) =>
      ((pod.spec as JsonObject)[list] as JsonObject[] | undefined)?.map((c) => c.image) ?? [];
    expect([...images('initContainers'), ...images('containers')]).toContain(
      'mirror.example.com/library/nginx:1.25',
    );
    // The output leaves out the CronJob refused for :latest: apply the patched objects again.
    const twice = await runCommand(apply, [...rules, '--file', '-', '--output', 'json'], {
      stdin: once.stdout,
    });
    expect(twice.code).toBe(0);
    expect(verdictsOf(twice.stdout).map((v) => [v.kind, v.name, v.patch])).toEqual([
      ['Pod', 'mixed', []],
      ['Deployment', 'api', []],
    ]);
  });
});

describe('modrule post-render with spec.podControllers', () => {
  const chart = readFileSync(join(ROOT, 'fixtures', 'helm-template.yaml'), 'utf8');
  const render = (rules: string) =>
    runCommand(postRender, ['--rules', rules, '--namespace', 'shop'], { stdin: chart });

  it("rewrites the images of a chart's Deployment template and of its test Pod", async () => {
    const r = await render(join(IMAGES, 'rules.yaml'));
    expect([r.code, r.stderr]).toEqual([0, '']);
    const out = splitYamlStream(r.stdout).map((d) => (d.value ?? {}) as JsonObject);
    const images = (spec: unknown) => ((spec as JsonObject).containers as JsonObject[]).map((c) => c.image);
    const deployment = out.find((d) => d.kind === 'Deployment') as JsonObject;
    expect(images(((deployment.spec as JsonObject).template as JsonObject).spec)).toEqual([
      'mirror.example.com/library/nginx:1.25.3',
      'quay.io/prometheus/nginx-exporter:1.1.0',
    ]);
    const test = out.find((d) => d.kind === 'Pod') as JsonObject;
    expect(images(test.spec)).toEqual(['mirror.example.com/library/busybox:1.36']);
  });

  it("refuses the chart whose Deployment has containers without limits, with the rule's message", async () => {
    const r = await render(join(PODS, 'rules.yaml'));
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('Deployment shop/release-web');
    expect(r.stderr).toContain('shop/require-limits: set resources.limits on every container of');
  });
});
