import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { runProcess } from '../cli';
import { parse, stringify } from 'yaml';
import { isJsonObject, JsonObject, JsonValue } from '../../util/json';
import { splitYamlStream } from '../../util/yaml-stream';
import { writeRule } from '../../cli/testing';
import {
  FIXTURE_CHARTS,
  Helm,
  helm,
  helmAvailable,
  identityPostRenderer,
  newHelm,
  PLUGIN_DIR,
  postRenderer,
  postRenderingHelm,
  ROOT,
  skipNotice,
} from './helm';

/*
 * `helm template` with the real Helm 3 and Helm 4 binaries and modrule as the post-renderer, on a chart built like a
 * third-party one (fixtures/charts/storefront: a Deployment, Service, ServiceAccount, ConfigMap, a CR of a CRD in
 * crds/, a hook Job, a test Pod, NOTES.txt and a packaged .tgz dependency). The install path (helm install/upgrade
 * against a real API server) is test/e2e/helm.e2e.ts.
 */

const available = helmAvailable();
if (!available) skipNotice();
const describeHelm = available ? describe : describe.skip;

const STOREFRONT = join(FIXTURE_CHARTS, 'storefront');
const ODDITIES = join(FIXTURE_CHARTS, 'oddities');
const RULES = join(ROOT, 'examples', 'helm', 'rules');
const tmp = mkdtempSync(join(tmpdir(), 'modrule-helm-rules-'));

// Labels every object it is shown: the output then says exactly which objects Helm passed to the post-renderer.
// Two rules: one for namespaced objects, and one in kubemod-system for cluster-scoped ones (ModRule scoping).
const SEEN = 'modrule.example.com/seen';
const labelAll = (namespace: string): JsonObject => ({
  apiVersion: 'api.kubemod.io/v1beta1',
  kind: 'ModRule',
  metadata: { name: 'label-all', namespace },
  spec: {
    type: 'Patch',
    match: [{ select: '$.metadata.name' }],
    patch: [{ op: 'add', path: `/metadata/labels/${SEEN.replace('/', '~1')}`, value: '"yes"' }],
  },
});
const LABEL_ALL = join(tmp, 'label-all.yaml');
writeFileSync(LABEL_ALL, `${stringify(labelAll('default'))}---\n${stringify(labelAll('kubemod-system'))}`);
const MATCH_NOTHING = writeRule('match-nothing', {
  type: 'Patch',
  match: [{ select: '$.kind', matchValue: 'DaemonSet' }],
  patch: [{ op: 'add', path: '/metadata/labels/never', value: '"set"' }],
});

const values = (text: string): JsonValue[] => splitYamlStream(text).map((d) => d.value);
const ids = (text: string): string[] =>
  values(text)
    .filter(isJsonObject)
    .map((o) => `${String(o.kind)}/${String((o.metadata as JsonObject).name)}`);
const find = (text: string, id: string): JsonObject =>
  values(text)
    .filter(isJsonObject)
    .find((o) => `${String(o.kind)}/${String((o.metadata as JsonObject).name)}` === id) as JsonObject;
const podSpec = (o: JsonObject): JsonObject =>
  ((o.spec as JsonObject).template as JsonObject).spec as JsonObject;
const images = (o: JsonObject): string[] =>
  (podSpec(o).containers as JsonObject[]).map((c) => String(c.image));
const comments = (text: string): string[] =>
  text
    .split('\n')
    .filter((l) => /^\s*#/.test(l))
    .map((l) => l.trim());
const withoutSeen = (o: JsonValue): JsonValue => {
  if (isJsonObject(o) && Array.isArray(o.items)) return { ...o, items: o.items.map(withoutSeen) };
  if (!isJsonObject(o) || !isJsonObject(o.metadata) || !isJsonObject(o.metadata.labels)) return o;
  const { [SEEN]: _seen, ...labels } = o.metadata.labels;
  const { labels: _all, ...metadata } = o.metadata;
  return { ...o, metadata: Object.keys(labels).length > 0 ? { ...metadata, labels } : metadata };
};

describeHelm.each([3, 4] as const)('Helm %i with modrule as the post-renderer', (major) => {
  let h: Helm;
  /** What Helm writes with no post-renderer. */
  let raw: string;
  /** What Helm writes with a post-renderer that changes nothing: the baseline modrule must keep to. */
  let plain: string;
  let identity: string[];
  const template = (...args: string[]) => helm(h, ['template', 'shop', STOREFRONT, '-n', 'shop', ...args]);

  beforeAll(async () => {
    h = await postRenderingHelm(major);
    identity = await identityPostRenderer(h);
    raw = (await template('--include-crds')).stdout;
    const r = await template('--include-crds', ...identity);
    expect(r.stderr).toBe('');
    plain = r.stdout;
  });

  it(`keeps comments itself: Helm ${major} writes a post-renderer's output ${major === 3 ? 'as it is' : 're-serialised'}`, () => {
    expect(values(plain)).toEqual(values(raw));
    expect(comments(plain)).toEqual(comments(raw));
    // Helm 4 parses the post-renderer's output and writes it back (kyaml: comments kept, lists re-indented).
    if (major === 3) expect(plain).toBe(raw);
    else expect(plain).not.toBe(raw);
  });

  it('changes nothing, byte for byte, when no rule matches: order, comments and hook annotations as Helm wrote them', async () => {
    const r = await template('--include-crds', ...postRenderer(h, `--rules=${MATCH_NOTHING}`));
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(plain);
  });

  it('patches the chart, its hooks (Helm 4 only) and its packaged dependency with the example rules', async () => {
    const r = await template('--include-crds', ...postRenderer(h, `--rules=${RULES}`, '--namespace=shop'));
    expect(r.code).toBe(0);
    const out = r.stdout;
    expect(ids(out)).toEqual(ids(plain));
    const deployment = find(out, 'Deployment/shop-storefront');
    expect(podSpec(deployment).securityContext).toEqual({ fsGroup: 2000, runAsNonRoot: true });
    expect(images(deployment)).toEqual([
      'registry.internal/library/nginx:1.25.3',
      'quay.io/prometheus/nginx-exporter:1.1.0',
    ]);
    // From charts/cache-1.3.0.tgz.
    const cache = find(out, 'StatefulSet/shop-cache');
    expect(images(cache)).toEqual(['registry.internal/library/redis:7.2.4']);
    expect(podSpec(cache).securityContext).toEqual({ runAsNonRoot: true });
    // The pre-install hook Job: Helm 4 passes hooks to the post-renderer, Helm 3 does not.
    const job = find(out, 'Job/shop-storefront-migrate');
    expect(images(job)).toEqual([
      `${major === 4 ? 'registry.internal' : 'docker.io'}/example/storefront-migrations:1.25.3`,
    ]);
    expect((job.metadata as JsonObject).annotations).toEqual(
      (find(plain, 'Job/shop-storefront-migrate').metadata as JsonObject).annotations,
    );
    // Everything else is as Helm rendered it, and every comment is still there, in the patched documents too.
    const before = values(plain);
    const changed = values(out).filter((v, i) => JSON.stringify(v) !== JSON.stringify(before[i]));
    expect(changed.map((o) => `${String((o as JsonObject).kind)}`)).toEqual(
      major === 4 ? ['Deployment', 'StatefulSet', 'Job'] : ['Deployment', 'StatefulSet'],
    );
    expect(comments(out)).toEqual(comments(plain));
  });

  it('is shown exactly what Helm passes: hooks with Helm 4 only, CRDs of crds/ with Helm 3 only (helm template --include-crds)', async () => {
    const r = await template('--include-crds', ...postRenderer(h, `--rules=${LABEL_ALL}`));
    expect(r.code).toBe(0);
    const seen = values(r.stdout)
      .filter(isJsonObject)
      .map(
        (o) =>
          `${String(o.kind)}:${String(((o.metadata as JsonObject).labels as JsonObject | undefined)?.[SEEN] ?? 'not shown')}`,
      );
    const hooks = major === 4 ? 'yes' : 'not shown';
    expect(seen).toEqual([
      `CustomResourceDefinition:${major === 3 ? 'yes' : 'not shown'}`,
      'ServiceAccount:yes',
      'ConfigMap:yes',
      'Service:yes',
      'Service:yes',
      'Deployment:yes',
      'StatefulSet:yes',
      'Catalog:yes',
      `Pod:${hooks}`,
      `Job:${hooks}`,
    ]);
    // Apart from that label, every object is as Helm rendered it (so Helm 4's filename annotation went back).
    expect(values(r.stdout).map(withoutSeen)).toEqual(values(plain));
  });

  it("fails with the rule's message when a Reject rule rejects an object", async () => {
    const r = await template(
      '--set',
      'service.type=LoadBalancer',
      ...postRenderer(h, `--rules=${RULES}`, '--namespace=shop'),
    );
    expect(r.code).not.toBe(0);
    expect(r.stdout).not.toContain('kind: Deployment');
    expect(r.stderr).toContain(
      'rejected Service shop/shop-storefront by shop/no-load-balancers: Service shop-storefront: type LoadBalancer is not allowed here, use an Ingress',
    );
  });

  // A CI job that keeps Helm's error output in a file: the rule's message must be in it (Helm 4 drops a plugin's
  // own error output; helm-plugin/modrule/post-renderer writes it to Helm's, see docs/helm.md).
  it.each([
    ['2>log (a file opened without append)', '2>"$LOG"'],
    ['>log 2>&1 (both streams in one file)', '>"$LOG" 2>&1'],
    ['2>>log (a file opened for appending)', '2>>"$LOG"'],
  ])("gets the rule's message into Helm's error output kept in a file: %s", async (_what, redirect) => {
    const log = join(mkdtempSync(join(tmpdir(), 'modrule-helm-log-')), 'helm.log');
    const args = ['template', 'shop', STOREFRONT, '-n', 'shop', '--set', 'service.type=LoadBalancer'];
    const flags = postRenderer(h, `--rules=${RULES}`, '--namespace=shop');
    const r = await runProcess('bash', ['-c', `"$0" "$@" ${redirect}`, h.bin, ...args, ...flags], {
      env: { ...h.env, LOG: log },
    });
    expect(r.code).not.toBe(0);
    const text = readFileSync(log, 'utf8');
    expect(text).toContain(
      'rejected Service shop/shop-storefront by shop/no-load-balancers: Service shop-storefront: type LoadBalancer is not allowed here',
    );
    expect(text).toContain('modrule post-render: 1 object rejected: nothing is installed\n');
    expect(text).toMatch(/^Error: /m); // Helm's own line is still there
  });

  it('fails when a rule fails at run time, naming it', async () => {
    const broken = writeRule('broken', {
      type: 'Patch',
      match: [{ select: '$.kind', matchValue: 'Service' }],
      patch: [{ op: 'replace', path: '/spec/loadBalancerIP', value: '10.0.0.1' }],
    });
    const r = await template(...postRenderer(h, `--rules=${broken}`));
    expect(r.code).not.toBe(0);
    // Both Services of the chart, in one line.
    expect(r.stderr).toContain(
      'modrule post-render: ModRule default/broken failed at run time on 2 objects, first on Service default/shop-cache: replace /spec/loadBalancerIP',
    );
    expect(r.stderr.match(/failed at run time/g)).toHaveLength(1);
    expect(r.stderr).toContain('nothing is installed');
  });

  it('fails when the rule folder does not exist', async () => {
    const r = await template(...postRenderer(h, '--rules=/no/such/rules'));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('modrule post-render: cannot read /no/such/rules: ENOENT');
  });

  describe('on what real charts render besides plain objects (fixtures/charts/oddities)', () => {
    const odd = (...args: string[]) => helm(h, ['template', 'odd', ODDITIES, ...args]);

    it('keeps a comment-only document and patches the objects of a List', async () => {
      const plainOdd = (await odd('--set', 'list=true', ...identity)).stdout;
      const r = await odd('--set', 'list=true', ...postRenderer(h, `--rules=${LABEL_ALL}`));
      expect(r.code).toBe(0);
      expect(comments(r.stdout)).toEqual(comments(plainOdd));
      // Helm 3 passes the List as it is; Helm 4 takes it apart into its items before the post-renderer.
      const list = values(r.stdout)
        .filter(isJsonObject)
        .find((o) => o.kind === 'List');
      expect(Boolean(list)).toBe(major === 3);
      expect(values(r.stdout).map(withoutSeen)).toEqual(values(plainOdd));
      expect(r.stdout.match(new RegExp(`${SEEN}: "yes"`, 'g'))).toHaveLength(3);
    });

    // Helm and kubectl take the last of a key given twice; a post-renderer must not be stricter.
    it('takes a template that gives keys twice as Helm does: the last one wins, the rules patch that one', async () => {
      const plainOdd = await odd('--set', 'duplicateKeys=true', ...identity);
      expect(plainOdd.code).toBe(0);
      const same = await odd('--set', 'duplicateKeys=true', ...postRenderer(h, `--rules=${MATCH_NOTHING}`));
      expect(same).toMatchObject({ code: 0, stdout: plainOdd.stdout });
      const r = await odd('--set', 'duplicateKeys=true', ...postRenderer(h, `--rules=${LABEL_ALL}`));
      expect(r.code).toBe(0);
      const cm = find(r.stdout, 'ConfigMap/odd-duplicates');
      expect(cm.metadata).toMatchObject({ labels: { tier: 'backend', [SEEN]: 'yes' } });
      expect(cm.data).toEqual({ mode: 'last' });
      expect(values(r.stdout).map(withoutSeen)).toEqual(values(plainOdd.stdout));
    });

    it('fails on a document without kind, naming the template', async () => {
      const r = await odd('--set', 'noKind=true', ...postRenderer(h, `--rules=${LABEL_ALL}`));
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(
        /document \d+ \(line \d+, oddities\/templates\/nokind.yaml\): not a Kubernetes object: kind is missing/,
      );
    });

    it('fails on a chart that renders no object', async () => {
      const r = await odd('--set', 'settings=false', ...postRenderer(h, `--rules=${LABEL_ALL}`));
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(
        'modrule post-render: the chart rendered no Kubernetes object: nothing to patch or check',
      );
    });
  });
});

describeHelm('the Helm 4 plugin in helm-plugin/modrule', () => {
  it('installs from the folder with no signature (a local folder is "local dev"), by link', async () => {
    const h = newHelm(4);
    const install = await helm(h, ['plugin', 'install', PLUGIN_DIR]);
    expect(install).toMatchObject({ code: 0, stderr: '' });
    expect(install.stdout).toBe(
      'Installing plugin from local directory (development mode)\nInstalled plugin: modrule\n',
    );
    const list = await helm(h, ['plugin', 'list']);
    expect(list.stdout.split('\n')[1].split(/\s+/).slice(0, 5)).toEqual([
      'modrule',
      '0.1.0',
      'postrenderer/v1',
      'v1',
      'local',
    ]);
  });

  it('as a packaged .tgz, needs a .prov signature unless told --verify=false', async () => {
    const h = newHelm(4);
    const out = mkdtempSync(join(tmpdir(), 'modrule-plugin-tgz-'));
    expect((await helm(h, ['plugin', 'package', PLUGIN_DIR, '-d', out, '--sign=false'])).code).toBe(0);
    const tgz = join(out, 'modrule-0.1.0.tgz');
    const refused = await helm(h, ['plugin', 'install', tgz]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('plugin verification failed: no provenance file (.prov) found');
    const unverified = await helm(h, ['plugin', 'install', tgz, '--verify=false']);
    expect(unverified.code).toBe(0);
    expect((await helm(h, ['plugin', 'list'])).stdout).toMatch(
      /modrule\s+0\.1\.0\s+postrenderer\/v1\s+v1\s+unsigned/,
    );
  });
});

describe('fixtures/charts/storefront', () => {
  it('vendors fixtures/charts/cache as charts/cache-1.3.0.tgz, file for file (helm package fixtures/charts/cache)', () => {
    const out = mkdtempSync(join(tmpdir(), 'modrule-tgz-'));
    execFileSync('tar', ['-xzf', join(STOREFRONT, 'charts', 'cache-1.3.0.tgz'), '-C', out]);
    const files = (dir: string): string[] =>
      readdirSync(dir, { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile())
        .map((e) => relative(dir, join(e.parentPath, e.name)))
        .sort();
    const source = join(FIXTURE_CHARTS, 'cache');
    expect(files(join(out, 'cache'))).toEqual(files(source));
    const read = (dir: string, f: string) => readFileSync(join(dir, f), 'utf8');
    for (const f of files(source)) {
      // helm package writes Chart.yaml back in its own form.
      if (f === 'Chart.yaml') expect(parse(read(join(out, 'cache'), f))).toEqual(parse(read(source, f)));
      else expect(read(join(out, 'cache'), f)).toBe(read(source, f));
    }
  });
});
