import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { JsonObject } from '../util/json';
import { splitYamlStream } from '../util/yaml-stream';
import { UsageError } from './io';
import { HELM_FILENAME_ANNOTATION, run } from './post-render';
import { runCommand, writeRule } from './testing';

const ROOT = join(__dirname, '..');
// What Helm 3 hands a post-renderer: `# Source:` comments, an empty template, a List, a test hook.
const HELM3 = readFileSync(join(ROOT, 'fixtures', 'helm-template.yaml'), 'utf8');
const RULES = join(ROOT, 'examples', 'helm', 'rules');

const postRender = (args: string[], stdin: string) => runCommand(run, args, { stdin });
const values = (text: string) => splitYamlStream(text).map((d) => d.value);
const texts = (text: string) => splitYamlStream(text).map((d) => d.text);

describe('modrule post-render', () => {
  it('patches the objects and gives every other document back byte for byte', async () => {
    const r = await postRender(['--rules', RULES, '--namespace', 'shop'], HELM3);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const [sa, empty, list, service, deployment, pod] = texts(r.stdout);
    const input = texts(HELM3);
    // Untouched: the ServiceAccount, the template that rendered nothing, the List, the Service, the test Pod.
    expect([sa, empty, list, service, pod]).toEqual([input[0], input[1], input[2], input[3], input[5]]);
    // The Deployment: patched, its `# Source:` comment kept, the rest of the text as Helm wrote it.
    expect(deployment).toMatch(/^---\n# Source: web\/templates\/deployment.yaml\napiVersion: apps\/v1\n/);
    const spec = ((values(r.stdout)[4] as JsonObject).spec as JsonObject).template as JsonObject;
    expect((spec.spec as JsonObject).securityContext).toEqual({ fsGroup: 2000, runAsNonRoot: true });
    expect(deployment).toContain('image: registry.internal/library/nginx:1.25.3\n');
  });

  it('writes the input back unchanged when no rule matches', async () => {
    const r = await postRender(['--rules', writeRule('nothing', labelSpec('StatefulSet'))], HELM3);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(HELM3);
  });

  it('admits List items one by one and keeps the List', async () => {
    const r = await postRender(['--rules', writeRule('cm', labelSpec('ConfigMap'))], HELM3);
    const list = values(r.stdout)[2] as JsonObject;
    expect(list.kind).toBe('List');
    expect((list.items as JsonObject[]).map((i) => (i.metadata as JsonObject).labels)).toEqual([
      { 'app.kubernetes.io/name': 'web', patched: 'yes' },
      { patched: 'yes' },
    ]);
  });

  it("hides Helm 4's filename annotation from the rules and gives it back", async () => {
    // Helm 4 annotates every document; the API server never sees the annotation, so rules must not either.
    const helm4 = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    ${HELM_FILENAME_ANNOTATION}: 'web/templates/a.yaml'\n`;
    const unannotated = writeRule('unannotated', {
      type: 'Patch',
      match: [{ select: '$.metadata.annotations', negate: true }],
      patch: [{ op: 'add', path: '/metadata/annotations/owner', value: 'shop' }],
    });
    const r = await postRender(['--rules', unannotated], helm4);
    expect(r.code).toBe(0);
    expect(((values(r.stdout)[0] as JsonObject).metadata as JsonObject).annotations).toEqual({
      [HELM_FILENAME_ANNOTATION]: 'web/templates/a.yaml',
      owner: 'shop',
    });
    const same = await postRender(['--rules', writeRule('nothing', labelSpec('Secret'))], helm4);
    expect(same.stdout).toBe(helm4);
  });

  it('gives the same manifests for the same input (helm upgrade sees no change)', async () => {
    const first = await postRender(['--rules', RULES, '--namespace', 'shop'], HELM3);
    const second = await postRender(['--rules', RULES, '--namespace', 'shop'], HELM3);
    expect(second).toEqual(first);
    // The rules are idempotent: their own output goes through unchanged.
    expect((await postRender(['--rules', RULES, '--namespace', 'shop'], first.stdout)).stdout).toBe(
      first.stdout,
    );
  });

  it("fails with the rule's message when a Reject rule rejects an object, and writes nothing", async () => {
    const r = await postRender(['--rules', RULES], HELM3.replace('type: ClusterIP', 'type: LoadBalancer'));
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      'rejected Service default/release-web by default/no-load-balancers: Service release-web: type LoadBalancer is not allowed here, use an Ingress\n' +
        'modrule post-render: 1 object rejected: nothing is installed\n',
    );
  });

  it('fails when a rule fails at run time, instead of letting the object through unpatched', async () => {
    const broken = writeRule('broken', {
      type: 'Patch',
      match: [{ select: '$.kind', matchValue: 'Deployment' }],
      patch: [{ op: 'replace', path: '/spec/template/spec/missing/field', value: '1' }],
    });
    const r = await postRender(['--rules', broken], HELM3);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      /^modrule post-render: ModRule default\/broken failed at run time on 1 object, first on Deployment default\/release-web: .*; nothing is installed \(--on-error=warn installs them without the failing rules' changes, as the webhook admits them; --explain shows each\)\n$/,
    );
  });

  it('--on-error=warn: installs the objects as the webhook admits them, with one warning line', async () => {
    const broken = writeRule('broken', {
      type: 'Patch',
      match: [{ select: '$.kind', matchValue: 'Deployment' }],
      patch: [{ op: 'replace', path: '/spec/template/spec/missing/field', value: '1' }],
    });
    const r = await postRender(['--rules', broken, '--on-error=warn'], HELM3);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(HELM3);
    expect(r.stderr).toMatch(
      /^warning: ModRule default\/broken failed at run time on 1 object, first on Deployment default\/release-web: .*; they are installed without the failing rules' changes, as the webhook admits them\n$/,
    );
  });

  it('prints --explain on stderr and still writes the manifests', async () => {
    const r = await postRender(['--rules', RULES, '--explain'], HELM3);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('Deployment default/release-web (CREATE):\n');
    expect(values(r.stdout)).toHaveLength(6);
  });

  it.each([
    ['', /the chart rendered no Kubernetes object/],
    ['---\n# Source: web/templates/ingress.yaml\n', /the chart rendered no Kubernetes object/],
    [
      '---\n# Source: web/templates/a.yaml\napiVersion: v1\nkind: ConfigMap\n---\n# Source: web/templates/b.yaml\napiVersion: v1\ndata: {}\n',
      /^document 2 \(line 5, web\/templates\/b.yaml\): not a Kubernetes object: kind is missing$/,
    ],
    ['kind: ConfigMap\n', /^document 1 \(line 1\): not a Kubernetes object: apiVersion is missing$/],
    [
      'apiVersion: v1\nkind: List\nitems:\n  - kind: ConfigMap\n',
      /^document 1 \(line 1\) items\[0\]: .*apiVersion/,
    ],
    ['- a\n- b\n', /^document 1 \(line 1\): not a Kubernetes object \(a mapping with kind\)$/],
    ['kind: [\n', /^<stdin>:2:1: document 1: Flow sequence .*\n 1 \| kind: \[\n 2 \| \n {3}\| \^$/],
  ])('refuses input that is not Kubernetes objects: %j', async (stdin, message) => {
    await expect(postRender(['--rules', RULES], stdin)).rejects.toThrow(UsageError);
    await expect(postRender(['--rules', RULES], stdin)).rejects.toThrow(message);
  });

  it.each([
    [['--rules', '/does/not/exist'], /cannot read \/does\/not\/exist/],
    [['--rules', RULES, '--file', 'x.yaml'], /^--file: a post-renderer reads standard input/],
    [['--rules', RULES, '--output=json'], /^--output=json: a post-renderer/],
    [['--file', '-'], /--file/],
    [['--namespace', 'x'], /--rules is required/],
    [['--rules', '-'], /standard input holds the manifests Helm rendered/],
  ])('refuses bad usage %j', async (args, message) => {
    await expect(postRender(args, HELM3)).rejects.toThrow(message);
    // Before it looks at what Helm rendered, even when that is nothing.
    await expect(postRender(args, '')).rejects.toThrow(message);
  });
});

function labelSpec(kind: string): JsonObject {
  return {
    type: 'Patch',
    match: [{ select: '$.kind', matchValue: kind }],
    patch: [{ op: 'add', path: '/metadata/labels/patched', value: '"yes"' }],
  };
}
