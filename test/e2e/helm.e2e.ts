import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isJsonObject, JsonObject, JsonValue } from '../../util/json';
import { parseYamlDocuments } from '../../util/yaml';
import { ProcessResult, runProcess } from '../cli';
import { Helm, helmAvailable, newHelm, ROOT, skipNotice } from '../helm/helm';
import { readmeRecipe } from '../helm/readme';
import { E2E_MODE, E2eCluster, startCluster } from './target';
import { waitFor } from './cluster';

/*
 * Helm against a real kube-apiserver 1.37 (with kube-controller-manager, for garbage collection and namespace
 * deletion), with the real Helm 3.22 and 4.3: the README's recipes, run as written.
 * - the post-renderer: helm install and helm upgrade of fixtures/charts/storefront patched by examples/helm/rules;
 * - modrule's chart: helm install, upgrade and uninstall of charts/modrule.
 * Needs a cluster (target.ts: KUBEBUILDER_ASSETS with kube-controller-manager and kubectl, or KUBECONFIG) and the Helm
 * binaries.
 */

const available = helmAvailable();
if (E2E_MODE === 'none')
  process.stderr.write(
    'e2e helm: neither KUBEBUILDER_ASSETS nor KUBECONFIG is set; skipping the Helm install tests ' +
      '(KUBEBUILDER_ASSETS="$(setup-envtest use -p path 1.37.x)", see the README).\n',
  );
else if (!available) skipNotice();
const describeHelm = E2E_MODE !== 'none' && available ? describe : describe.skip;

/** Objects as the API server has them, or null when it has none. */
type Lookup = Map<string, JsonObject | null>;

describeHelm('Helm against a real API server', () => {
  let cp: E2eCluster;
  let shim: string;

  beforeAll(async () => {
    cp = await startCluster({ controllerManager: true });
    // No kubelet runs pods here, so a hook Job would never finish: `helm install|upgrade` get --no-hooks (hooks are
    // still rendered, post-rendered and stored with the release, only not run).
    shim = mkdtempSync(join(tmpdir(), 'modrule-helm-shim-'));
  }, 120_000);

  afterAll(async () => {
    await cp?.stop();
  });

  /** A Helm whose `helm` command (for the README's recipes) is this major, talking to the control plane. */
  function helmFor(major: 3 | 4): Helm {
    const h = newHelm(major, { KUBECONFIG: cp.kubeConfigPath });
    const dir = mkdtempSync(join(shim, `helm${major}-`));
    writeFileSync(
      join(dir, 'helm'),
      `#!/bin/sh\ncase "$1" in install|upgrade) exec "${h.bin}" "$@" --no-hooks;; esac\nexec "${h.bin}" "$@"\n`,
    );
    chmodSync(join(dir, 'helm'), 0o755);
    h.env.PATH_PREFIX = dir;
    return h;
  }

  /** Runs one README command with `helm` being `h`, from the repository root; Helm's stderr through a pipe. */
  function run(h: Helm, command: string): Promise<ProcessResult> {
    const script = `export PATH="$PATH_PREFIX:$PATH"; set -o pipefail; { ${command} 2>&1 1>&3 3>&- | cat >&2; } 3>&1`;
    return runProcess('bash', ['-c', script], { env: h.env, cwd: ROOT });
  }

  async function runOk(h: Helm, command: string): Promise<ProcessResult> {
    const r = await run(h, command);
    if (r.code !== 0) throw new Error(`${command}\nexit ${r.code}\n${r.stderr}`);
    return r;
  }

  /**
   * The objects as the API server has them (null: not there), in one `kubectl get -f`. Objects without a namespace
   * get `namespace` (Helm's manifests leave it to the release's).
   */
  async function lookup(given: JsonObject[], namespace?: string): Promise<Lookup> {
    const objects = given.map((o) => {
      const meta = o.metadata as JsonObject;
      return namespace && !meta.namespace ? { ...o, metadata: { ...meta, namespace } } : o;
    });
    const file = join(mkdtempSync(join(tmpdir(), 'modrule-lookup-')), 'objects.json');
    writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
    const args = ['get', '-f', file, '--ignore-not-found', '-o', 'json'];
    const r = await runProcess(cp.kubectl!, args, { env: { KUBECONFIG: cp.kubeConfigPath } });
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
    const text = r.stdout.trim();
    const items = text === '' ? [] : objectsOf(JSON.parse(text) as JsonObject);
    const found = new Map(items.map((o) => [key(o), o]));
    return new Map(objects.map((o) => [key(o), found.get(key(o)) ?? null]));
  }

  const objectsOf = (o: JsonObject): JsonObject[] =>
    Array.isArray(o.items) ? (o.items as JsonObject[]) : [o];
  const key = (o: JsonObject): string => {
    const meta = o.metadata as JsonObject;
    return `${String(o.kind)}/${String(meta.namespace ?? '')}/${String(meta.name)}`;
  };
  const manifests = (text: string): JsonObject[] => parseYamlDocuments(text).filter(isJsonObject);
  const resourceVersions = (found: Lookup): Record<string, JsonValue> =>
    Object.fromEntries(
      [...found].map(([k, o]) => [k, o ? ((o.metadata as JsonObject).resourceVersion ?? null) : null]),
    );
  const images = (o: JsonObject | null | undefined): string[] =>
    ((((o?.spec as JsonObject).template as JsonObject).spec as JsonObject).containers as JsonObject[]).map(
      (c) => String(c.image),
    );

  describe.each([3, 4] as const)(
    'the post-renderer recipe for Helm %i (README), on the storefront chart',
    (major) => {
      let h: Helm;
      const recipe = readmeRecipe(`Helm ${major}:`);
      const install = recipe.find((c) => c.startsWith('helm install '))!;

      beforeAll(async () => {
        h = helmFor(major);
        for (const command of recipe.filter((c) => c !== install)) await runOk(h, command);
      });

      afterAll(async () => {
        await run(h, 'helm uninstall shop --namespace shop');
      });

      it('installs the chart patched, hooks as each major passes them, and keeps its comments', async () => {
        const r = await runOk(h, install);
        expect(r.stdout).toContain('STATUS: deployed');
        expect(r.stdout).toContain('The storefront is installed as shop-storefront in shop.'); // NOTES.txt
        const manifest = (await runOk(h, 'helm get manifest shop --namespace shop')).stdout;
        const found = await lookup(manifests(manifest), 'shop');
        expect([...found].filter(([, o]) => o === null).map(([k]) => k)).toEqual([]);
        const deployment = found.get('Deployment/shop/shop-storefront');
        expect(images(deployment)).toEqual([
          'registry.internal/library/nginx:1.25.3',
          'quay.io/prometheus/nginx-exporter:1.1.0',
        ]);
        expect(
          (((deployment!.spec as JsonObject).template as JsonObject).spec as JsonObject).securityContext,
        ).toEqual({
          fsGroup: 2000,
          runAsNonRoot: true,
        });
        expect(images(found.get('StatefulSet/shop/shop-cache'))).toEqual([
          'registry.internal/library/redis:7.2.4',
        ]);
        // The release keeps the chart's comments; Helm 4 also keeps its filename annotation out of the cluster.
        expect(manifest).toContain("# Prometheus metrics from nginx's stub_status.");
        expect(JSON.stringify(deployment)).not.toContain('postrenderer.helm.sh');
        // The CRD of crds/ is installed as the chart has it, the Catalog of it as the post-renderer left it.
        expect(
          (
            await lookup([
              {
                apiVersion: 'shop.example.com/v1',
                kind: 'Catalog',
                metadata: { name: 'shop-storefront', namespace: 'shop' },
              },
            ])
          ).size,
        ).toBe(1);
        const hooks = manifests((await runOk(h, 'helm get hooks shop --namespace shop')).stdout);
        const job = hooks.find((o) => o.kind === 'Job')!;
        expect(images(job)).toEqual([
          `${major === 4 ? 'registry.internal' : 'docker.io'}/example/storefront-migrations:1.25.3`,
        ]);
      });

      it('upgrades with the same arguments to the same manifests, writing nothing', async () => {
        const before = (await runOk(h, 'helm get manifest shop --namespace shop')).stdout;
        const versions = resourceVersions(await lookup(manifests(before), 'shop'));
        expect(Object.values(versions).filter((v) => v === null)).toEqual([]);
        const r = await runOk(h, install.replace('helm install ', 'helm upgrade '));
        expect(r.stdout).toContain('REVISION: 2');
        expect((await runOk(h, 'helm get manifest shop --namespace shop')).stdout).toBe(before);
        expect(resourceVersions(await lookup(manifests(before), 'shop'))).toEqual(versions);
      });

      it("refuses an install a Reject rule rejects, with the rule's message, and creates nothing", async () => {
        const r = await run(
          h,
          `${install.replace('helm install shop ', 'helm install rejected ')} --set service.type=LoadBalancer`,
        );
        expect(r.code).not.toBe(0);
        expect(r.stderr).toContain(
          'rejected Service shop/rejected-storefront by shop/no-load-balancers: Service rejected-storefront: type LoadBalancer is not allowed here, use an Ingress',
        );
        expect((await run(h, 'helm status rejected --namespace shop')).stderr).toContain(
          'release: not found',
        );
        const found = await lookup([
          {
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            metadata: { name: 'rejected-storefront', namespace: 'shop' },
          },
        ]);
        expect([...found.values()]).toEqual([null]);
      });
    },
  );

  describe.each([4, 3] as const)("modrule's chart with Helm %i (README)", (major) => {
    let h: Helm;
    const [install, upgrade, uninstall] = readmeRecipe('The chart:');
    let rendered: JsonObject[];

    beforeAll(async () => {
      h = helmFor(major);
      rendered = manifests((await runOk(h, install.replace('helm install ', 'helm template '))).stdout);
    });

    it('installs every object of the chart', async () => {
      await runOk(h, install);
      const found = await lookup(rendered);
      expect([...found].filter(([, o]) => o === null).map(([k]) => k)).toEqual([]);
      const deployment = found.get('Deployment/kubemod-system/kubemod-operator')!;
      expect((deployment.spec as JsonObject).replicas).toBe(3);
    });

    it('upgrades with --reuse-values', async () => {
      await runOk(h, upgrade);
      const [deployment] = (await lookup([rendered.find((o) => o.kind === 'Deployment')!])).values();
      const c = (
        (((deployment!.spec as JsonObject).template as JsonObject).spec as JsonObject)
          .containers as JsonObject[]
      )[0];
      expect([(deployment!.spec as JsonObject).replicas, c.args]).toEqual([
        3,
        ['operator', '--log-level=debug'],
      ]);
    });

    it('uninstalls everything but the ModRule CRD (crds.keep), which a later install takes back', async () => {
      await runOk(h, uninstall);
      const gone = await waitFor(
        'the release objects to go',
        async () => {
          const found = await lookup(rendered);
          return [...found.values()].filter((o) => o !== null).length === 1 ? found : false;
        },
        90_000,
        1000,
      );
      const left = [...gone].filter(([, o]) => o !== null).map(([k]) => k);
      expect(left).toEqual(['CustomResourceDefinition//modrules.api.kubemod.io']);
      // A ModRule made while modrule is away (no webhook now) survives into the next install...
      const rule = join(mkdtempSync(join(tmpdir(), 'modrule-rule-')), 'rule.yaml');
      writeFileSync(
        rule,
        'apiVersion: api.kubemod.io/v1beta1\nkind: ModRule\nmetadata: {name: kept, namespace: default}\nspec:\n  type: Reject\n  match: [{select: "$.kind", matchValue: Secret}]\n',
      );
      const created = await runProcess(cp.kubectl!, ['apply', '-f', rule], {
        env: { KUBECONFIG: cp.kubeConfigPath },
      });
      expect(created.stderr).toBe('');
      const kept: JsonObject = {
        apiVersion: 'api.kubemod.io/v1beta1',
        kind: 'ModRule',
        metadata: { name: 'kept', namespace: 'default' },
      };
      // ...and with crds.keep=false the next uninstall removes the CRD and every ModRule with it.
      await runOk(h, `${install} --set crds.keep=false`);
      expect((await lookup([kept])).get('ModRule/default/kept')).not.toBeNull();
      await runOk(h, uninstall);
      await waitFor(
        'the CRD and the ModRule to go',
        async () => {
          const found = await lookup(rendered);
          const rule = await cp.get('/apis/api.kubemod.io/v1beta1/namespaces/default/modrules/kept');
          return [...found.values()].every((o) => o === null) && rule.status === 404;
        },
        90_000,
        1000,
      );
    });
  });
});
