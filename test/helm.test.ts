import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { JsonObject } from '../util/json';
import { runProcess } from './cli';

// `helm template ... | modrule apply`: the rendered chart on stdin, the manifests on stdout, exit non-zero with the
// reason on stderr, as a separate process. (Helm itself runs `modrule post-render`: test/helm/, with the real Helm.)
const CHART_OUTPUT = readFileSync(join(__dirname, '..', 'fixtures', 'helm-template.yaml'), 'utf8');
const RULES = join(__dirname, '..', 'examples', 'helm', 'rules');
const helmArgs = (...args: string[]): string[] => ['apply', '--rules', ...args];

const docs = (text: string): JsonObject[] =>
  parseAllDocuments(text)
    .map((d) => d.toJS() as JsonObject | null)
    .filter((d): d is JsonObject => d !== null);

type Container = { name: string; image: string };
const podSpec = (d: JsonObject): JsonObject =>
  ((d.spec as JsonObject).template as JsonObject).spec as JsonObject;

describe('modrule apply on the output of helm template, in a pipe', () => {
  it('patches a chart: stdin to stdout, every object kept, List items and empty documents handled', async () => {
    const r = await runProcess('modrule', helmArgs(RULES), { stdin: CHART_OUTPUT });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = docs(r.stdout);
    // The empty document is gone; the List's two ConfigMaps come out as documents of their own.
    expect(out.map((d) => `${String(d.kind)}/${String((d.metadata as JsonObject).name)}`)).toEqual([
      'ServiceAccount/release-web',
      'ConfigMap/release-web-config',
      'ConfigMap/release-web-env',
      'Service/release-web',
      'Deployment/release-web',
      'Pod/release-web-test-connection',
    ]);
    const deployment = out[4];
    expect(podSpec(deployment).securityContext).toEqual({ fsGroup: 2000, runAsNonRoot: true });
    expect((podSpec(deployment).containers as Container[]).map((c) => c.image)).toEqual([
      'registry.internal/library/nginx:1.25.3',
      'quay.io/prometheus/nginx-exporter:1.1.0',
    ]);
    // Objects no rule touches come out as they went in (no namespace added to namespace-less manifests).
    const input = docs(CHART_OUTPUT);
    expect(out[0]).toEqual(input[0]);
    expect(out[3]).toEqual(input[2]);
    expect(out[5]).toEqual(input[4]);
  });

  it('fails the install with the rule message on stderr when a rule rejects an object', async () => {
    const chart = CHART_OUTPUT.replace('type: ClusterIP', 'type: LoadBalancer');
    const r = await runProcess('modrule', helmArgs(RULES), { stdin: chart });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toBe(
      'rejected Service default/release-web by default/no-load-balancers: Service release-web: type LoadBalancer is not allowed here, use an Ingress\n',
    );
  });

  it('reads the release namespace from --namespace, and `helm template | modrule apply --file -` gives the same', async () => {
    const viaHelm = await runProcess('modrule', [...helmArgs(RULES), '--namespace', 'shop'], {
      stdin: CHART_OUTPUT,
    });
    const piped = await runProcess('modrule', [...helmArgs(RULES), '--namespace', 'shop', '--file', '-'], {
      stdin: CHART_OUTPUT,
    });
    expect(viaHelm.code).toBe(0);
    expect(piped).toEqual(viaHelm);
  });

  it('exits non-zero with the file and field when a rule is invalid', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'modrule-helm-'));
    writeFileSync(
      join(dir, 'bad.yaml'),
      'apiVersion: api.kubemod.io/v1beta1\nkind: ModRule\nmetadata:\n  name: bad\nspec:\n  type: Patch\n  match:\n    - select: "$.kind"\n      matchValue: Deployment\n',
    );
    const r = await runProcess('modrule', helmArgs(dir), { stdin: CHART_OUTPUT });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`${join(dir, 'bad.yaml')}: ModRule default/bad: spec.patch: required`);
  });
});
