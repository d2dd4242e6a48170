import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { JsonObject } from '../../util/json';
import { createKubeClient, KubeApiError, KubeClient } from '../../kube/kube';
import { kubeConfigAccess } from '../../kube/kubeconfig';
import { bundleObjects, pathOf } from './cluster';
import { describeCluster, E2eCluster, startCluster } from './target';
import { messageOf } from '../../util/errors';

/*
 * bundle.yaml and the cert-manager overlay as a user installs them: the real kubectl 1.37 against a real 1.37 API
 * server with kube-controller-manager (namespace deletion, garbage collection). Install, re-apply and uninstall must
 * exit 0 and print nothing on stderr: no error, no deprecation or other warning. Needs KUBEBUILDER_ASSETS with kubectl
 * (setup-envtest's assets, or this project's CI's); skipped otherwise.
 */

const ROOT = join(__dirname, '..', '..');
const objects = bundleObjects();

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

// Stand-ins for cert-manager's two CRDs, so the overlay's Issuer and Certificate can be stored (no cert-manager
// controller runs here: what is tested is that kubectl builds and applies the overlay).
const certManagerCrd = (kind: string, plural: string): JsonObject => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `${plural}.cert-manager.io` },
  spec: {
    group: 'cert-manager.io',
    names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
    scope: 'Namespaced',
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
});

// Client-side apply always sends a policy/v1 PodDisruptionBudget's selector (its patch strategy is "replace"), so
// kubectl says "configured" although the server changes nothing (the resourceVersion stays): checked below.
const PDB_CONFIGURED = 'poddisruptionbudget.policy/kubemod-operator configured';
const notUnchanged = (stdout: string): string[] =>
  stdout
    .trim()
    .split('\n')
    .filter((l) => !l.endsWith(' unchanged'));

describeCluster('bundle.yaml with kubectl 1.37 on Kubernetes 1.37', () => {
  let cp: E2eCluster;
  let admin: KubeClient;
  let kubeSystemBefore = '';

  function kubectl(args: string[], stdin = ''): Promise<Result> {
    return new Promise((resolve) => {
      const child = execFile(
        cp.kubectl!,
        args,
        { cwd: ROOT, env: { ...process.env, KUBECONFIG: cp.kubeConfigPath }, timeout: 180_000 },
        (err, stdout, stderr) =>
          resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
      child.stdin?.end(stdin);
    });
  }

  async function exists(obj: JsonObject): Promise<boolean> {
    try {
      await admin.request('GET', pathOf(obj));
      return true;
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return false;
      throw err;
    }
  }

  /** resourceVersion of each object: unchanged when a write changed nothing. */
  const versions = (list: JsonObject[]) =>
    Promise.all(
      list.map(async (o) => [
        pathOf(o),
        ((await admin.request('GET', pathOf(o))).metadata as JsonObject).resourceVersion,
      ]),
    );

  const kubeSystemLabels = async () =>
    JSON.stringify(
      ((await admin.request('GET', '/api/v1/namespaces/kube-system')).metadata as JsonObject).labels,
    );

  /** The namespace's and the CRD's deletion status, and what the controller-manager last said about them. */
  async function whatIsStillTerminating(): Promise<string> {
    const status = async (path: string): Promise<string> => {
      try {
        return JSON.stringify((await admin.request('GET', path)).status);
      } catch (err) {
        return messageOf(err);
      }
    };
    return [
      `namespace: ${await status('/api/v1/namespaces/kubemod-system')}`,
      `crd: ${await status('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/modrules.api.kubemod.io')}`,
      ...(cp.own?.logTail('controller-manager', 400) ?? '')
        .split('\n')
        .filter((l) => /namespace|kubemod/i.test(l))
        .slice(-30),
    ].join('\n');
  }

  beforeAll(async () => {
    cp = await startCluster({ controllerManager: true });
    if (!cp.kubectl) throw new Error('e2e: no kubectl (KUBEBUILDER_ASSETS, E2E_KUBECTL)');
    admin = createKubeClient(kubeConfigAccess(cp.kubeConfig()));
    kubeSystemBefore = await kubeSystemLabels();
  }, 120_000);

  afterAll(async () => {
    await cp?.stop();
  });

  it('installs with kubectl apply: every object created, exit 0, nothing on stderr', async () => {
    const r = await kubectl(['apply', '-f', 'bundle.yaml']);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(objects.length);
    expect(lines.every((l) => l.endsWith(' created'))).toBe(true);
    for (const obj of objects) expect(await exists(obj)).toBe(true);
  });

  it('re-applies as a no-op: exit 0, nothing on stderr, no object changed', async () => {
    const before = await versions(objects);
    const r = await kubectl(['apply', '-f', 'bundle.yaml']);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(notUnchanged(r.stdout)).toEqual([PDB_CONFIGURED]);
    expect(await versions(objects)).toEqual(before);
  });

  it('leaves kube-system as it was (the webhooks exclude it by name)', async () => {
    expect(await kubeSystemLabels()).toBe(kubeSystemBefore);
  });

  it('uninstalls with kubectl delete: exit 0, nothing on stderr, nothing left', async () => {
    // kubectl waits for the namespace and the CRD to be gone; bounded below the test's timeout so that a hang
    // (seen once in a loaded CI run) fails with what was still waiting instead of a bare jest timeout.
    const r = await kubectl(['delete', '-f', 'bundle.yaml', '--timeout=90s']);
    const stuck = r.code === 0 ? '' : await whatIsStillTerminating();
    expect({ code: r.code, stderr: r.stderr, stuck }).toEqual({ code: 0, stderr: '', stuck: '' });
    for (const obj of objects) expect([pathOf(obj), await exists(obj)]).toEqual([pathOf(obj), false]);
    expect(await kubeSystemLabels()).toBe(kubeSystemBefore);
  });

  it('installs, re-applies and uninstalls the cert-manager overlay (kubectl apply -k) the same way', async () => {
    const crds = [certManagerCrd('Issuer', 'issuers'), certManagerCrd('Certificate', 'certificates')];
    const crdsIn = await kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: crds }),
    );
    expect(crdsIn).toMatchObject({ code: 0, stderr: '' });
    await kubectl([
      'wait',
      '--for=condition=Established',
      'crd/issuers.cert-manager.io',
      'crd/certificates.cert-manager.io',
    ]);

    const first = await kubectl(['apply', '-k', 'config/cert-manager']);
    expect({ code: first.code, stderr: first.stderr }).toEqual({ code: 0, stderr: '' });
    expect(first.stdout).toContain('certificate.cert-manager.io/kubemod-webhook-server-cert created');
    const mutating = await admin.request(
      'GET',
      '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/kubemod-mutating-webhook-configuration',
    );
    expect((mutating.metadata as JsonObject).annotations).toMatchObject({
      'cert-manager.io/inject-ca-from': 'kubemod-system/kubemod-webhook-server-cert',
    });
    const before = await versions(objects);
    const again = await kubectl(['apply', '-k', 'config/cert-manager']);
    expect({ code: again.code, stderr: again.stderr }).toEqual({ code: 0, stderr: '' });
    expect(notUnchanged(again.stdout)).toEqual([PDB_CONFIGURED]);
    expect(await versions(objects)).toEqual(before);
    const gone = await kubectl(['delete', '-k', 'config/cert-manager']);
    expect({ code: gone.code, stderr: gone.stderr }).toEqual({ code: 0, stderr: '' });
    for (const obj of objects) expect([pathOf(obj), await exists(obj)]).toEqual([pathOf(obj), false]);
  });
});
