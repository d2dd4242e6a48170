import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { isJsonObject, JsonObject } from '../../util/json';
import { KubeApiError, KubeClient } from '../../kube/kube';
import { messageOf } from '../../util/errors';

/** Settings of the operator the e2e suite runs; where the API server reaches it is target.ts's to say. */
export interface E2eSettings {
  /** Namespace for cluster-wide rules and the certificate Secret. */
  clusterNamespace: string;
}

/** Reads E2E_CLUSTER_NAMESPACE (the webhook's host and port: E2eCluster.webhookHost and webhookPort()). */
export function e2eSettings(env: Record<string, string | undefined> = process.env): E2eSettings {
  return { clusterNamespace: env.E2E_CLUSTER_NAMESPACE || 'kubemod-system' };
}

const ROOT = join(__dirname, '..', '..');

function readManifests(relative: string): JsonObject[] {
  const file = join(ROOT, relative);
  if (!existsSync(file)) return [];
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((d) => d.toJSON() as unknown)
    .filter(isJsonObject);
}

/** Every object of bundle.yaml, in apply order. */
export function bundleObjects(): JsonObject[] {
  return readManifests('bundle.yaml');
}

const COLLECTIONS: Record<string, string> = {
  'v1/Namespace': '/api/v1/namespaces',
  'v1/ServiceAccount': '/api/v1/namespaces/{ns}/serviceaccounts',
  'v1/Service': '/api/v1/namespaces/{ns}/services',
  'v1/ConfigMap': '/api/v1/namespaces/{ns}/configmaps',
  'v1/Secret': '/api/v1/namespaces/{ns}/secrets',
  'v1/Node': '/api/v1/nodes',
  'apps/v1/Deployment': '/apis/apps/v1/namespaces/{ns}/deployments',
  'policy/v1/PodDisruptionBudget': '/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets',
  'apiextensions.k8s.io/v1/CustomResourceDefinition':
    '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
  'rbac.authorization.k8s.io/v1/ClusterRole': '/apis/rbac.authorization.k8s.io/v1/clusterroles',
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
  'rbac.authorization.k8s.io/v1/Role': '/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles',
  'rbac.authorization.k8s.io/v1/RoleBinding':
    '/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings',
  'admissionregistration.k8s.io/v1/MutatingWebhookConfiguration':
    '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations',
  'admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration':
    '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations',
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy':
    '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies',
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding':
    '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings',
  'api.kubemod.io/v1beta1/ModRule': '/apis/api.kubemod.io/v1beta1/namespaces/{ns}/modrules',
};

/** The collection an object belongs to, e.g. /apis/apps/v1/namespaces/x/deployments. */
export function collectionOf(obj: JsonObject): string {
  const template = COLLECTIONS[`${String(obj.apiVersion)}/${String(obj.kind)}`];
  if (!template)
    throw new Error(`e2e: no collection known for ${String(obj.apiVersion)} ${String(obj.kind)}`);
  const ns = String((obj.metadata as JsonObject).namespace ?? '');
  return template.replace('{ns}', encodeURIComponent(ns));
}

/** The object's own path. */
export function pathOf(obj: JsonObject): string {
  return `${collectionOf(obj)}/${encodeURIComponent(String((obj.metadata as JsonObject).name))}`;
}

const SERVER_FIELDS = ['resourceVersion', 'uid', 'creationTimestamp', 'managedFields', 'generation'];

/**
 * Everything the suite writes to a cluster goes through here, so it can leave the cluster as it found it: objects
 * it created are deleted (newest first), objects that existed are put back as they were (labels included).
 */
export class ClusterLedger {
  private readonly created: string[] = [];
  private readonly previous = new Map<string, JsonObject>();

  constructor(private readonly client: KubeClient) {}

  /** Creates obj, or replaces the existing one after keeping a copy to restore. */
  async apply(obj: JsonObject): Promise<JsonObject> {
    const path = pathOf(obj);
    let existing: JsonObject | null = null;
    try {
      existing = await this.client.request('GET', path);
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 404)) throw err;
    }
    if (!existing) {
      const made = await this.client.request('POST', collectionOf(obj), { body: obj });
      if (!this.created.includes(path) && !this.previous.has(path)) this.created.push(path);
      return made;
    }
    if (!this.previous.has(path) && !this.created.includes(path)) this.previous.set(path, existing);
    return replaceFresh(
      this.client,
      path,
      (current) => {
        const meta = {
          ...(obj.metadata as JsonObject),
          resourceVersion: (current.metadata as JsonObject).resourceVersion,
        };
        // Fields the server assigned (a Service's clusterIP) must stay.
        const spec =
          isJsonObject(current.spec) && isJsonObject(obj.spec) ? { ...current.spec, ...obj.spec } : obj.spec;
        return spec === undefined ? { ...obj, metadata: meta } : { ...obj, metadata: meta, spec };
      },
      { first: existing },
    );
  }

  /** Records an object created elsewhere (by the operator, or by a test) for deletion at the end. */
  track(path: string): void {
    if (!this.created.includes(path) && !this.previous.has(path)) this.created.push(path);
  }

  /** Deletes what was created and restores what was replaced; reports what it could not undo. */
  async restore(): Promise<string[]> {
    const problems: string[] = [];
    for (const path of [...this.created].reverse()) {
      try {
        await remove(this.client, path);
      } catch (err) {
        problems.push(`delete ${path}: ${messageOf(err)}`);
      }
    }
    for (const [path, old] of [...this.previous].reverse()) {
      try {
        const current = await this.client.request('GET', path);
        const meta = { ...(old.metadata as JsonObject) };
        for (const f of SERVER_FIELDS) delete meta[f];
        meta.resourceVersion = (current.metadata as JsonObject).resourceVersion;
        await this.client.request('PUT', path, { body: { ...old, metadata: meta } });
      } catch (err) {
        problems.push(`restore ${path}: ${messageOf(err)}`);
      }
    }
    this.created.length = 0;
    this.previous.clear();
    return problems;
  }
}

/** The ModRule CRD from config/ (another part of the repo), or a minimal one with a status subresource. */
export function crdManifest(): JsonObject {
  const fromConfig = readManifests('config/crd/modrules.yaml').find(
    (m) => m.kind === 'CustomResourceDefinition',
  );
  if (fromConfig) return fromConfig;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'modrules.api.kubemod.io' },
    spec: {
      group: 'api.kubemod.io',
      names: { kind: 'ModRule', listKind: 'ModRuleList', plural: 'modrules', singular: 'modrule' },
      scope: 'Namespaced',
      versions: [
        {
          name: 'v1beta1',
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
                status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
              },
            },
          },
        },
      ],
    },
  };
}

const PATHS: Record<string, string> = {
  dragnet: '/dragnet-webhook',
  'dragnet-probe': '/dragnet-probe',
  mmodrule: '/mutate-api-kubemod-io-v1beta1-modrule',
  podbinding: '/podbinding-webhook',
  vmodrule: '/validate-api-kubemod-io-v1beta1-modrule',
};

function minimalWebhook(name: string, rules: JsonObject[], failurePolicy: 'Fail' | 'Ignore'): JsonObject {
  return {
    name,
    admissionReviewVersions: ['v1'],
    sideEffects: name.startsWith('podbinding') ? 'NoneOnDryRun' : 'None',
    failurePolicy,
    timeoutSeconds: 10,
    clientConfig: {},
    rules,
  };
}

/**
 * The two webhook configurations from bundle.yaml (or minimal ones), rewritten for a test run: every webhook calls
 * `baseUrl` by URL, and the dragnet and pod-binding webhooks only see namespaces labelled `scopeLabel=true`, so
 * the run cannot disturb anything else in the cluster.
 */
export function webhookManifests(
  baseUrl: string,
  scopeLabel: string,
): { mutating: JsonObject; validating: JsonObject } {
  const modrules = {
    apiGroups: ['api.kubemod.io'],
    apiVersions: ['v1beta1'],
    operations: ['CREATE', 'UPDATE'],
    resources: ['modrules'],
  };
  const mutating = bundleObjects().find((m) => m.kind === 'MutatingWebhookConfiguration') ?? {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: 'kubemod-mutating-webhook-configuration' },
    webhooks: [
      minimalWebhook('mmodrule.kubemod.io', [modrules], 'Fail'),
      minimalWebhook(
        'dragnet.kubemod.io',
        [
          {
            apiGroups: ['*'],
            apiVersions: ['*'],
            operations: ['CREATE', 'UPDATE', 'DELETE'],
            resources: ['configmaps', 'pods', 'deployments'],
          },
        ],
        'Ignore',
      ),
      minimalWebhook(
        'podbinding.kubemod.io',
        [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods/binding'] }],
        'Ignore',
      ),
    ],
  };
  const validating = bundleObjects().find((m) => m.kind === 'ValidatingWebhookConfiguration') ?? {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: 'kubemod-validating-webhook-configuration' },
    webhooks: [minimalWebhook('vmodrule.kubemod.io', [modrules], 'Fail')],
  };
  for (const config of [mutating, validating]) {
    const meta = config.metadata as JsonObject;
    delete meta.annotations; // no cert-manager CA injection: the operator under test sets caBundle
    for (const hook of (config.webhooks ?? []) as JsonObject[]) {
      const short = String(hook.name).split('.')[0];
      hook.clientConfig = { url: `${baseUrl}${PATHS[short] ?? '/dragnet-webhook'}` };
      if (short === 'dragnet' || short === 'podbinding') {
        hook.namespaceSelector = { matchLabels: { [scopeLabel]: 'true' } };
      }
    }
  }
  return { mutating, validating };
}

/**
 * Replaces the object at `path` with `build(current)`; on a 409 Conflict (someone, often the operator, wrote in
 * between) reads it again and retries, as kubectl does. `first`: the object as just read, for the first attempt.
 */
export async function replaceFresh(
  client: KubeClient,
  path: string,
  build: (current: JsonObject) => JsonObject,
  options: { first?: JsonObject; query?: Record<string, string> } = {},
): Promise<JsonObject> {
  let current = options.first;
  for (let attempt = 1; ; attempt++) {
    current ??= await client.request('GET', path);
    try {
      return await client.request('PUT', path, { body: build(current), query: options.query });
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 409) || attempt >= 5) throw err;
      current = undefined;
    }
  }
}

/** Creates an object, or replaces it (keeping its resourceVersion) when it exists. */
export async function apply(client: KubeClient, collection: string, obj: JsonObject): Promise<JsonObject> {
  try {
    return await client.request('POST', collection, { body: obj });
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 409)) throw err;
  }
  // It exists: replace it at its current version. The operator writes the rule's status concurrently, so a replace
  // can meet a newer version.
  const path = `${collection}/${String((obj.metadata as JsonObject).name)}`;
  return replaceFresh(client, path, (current) => ({
    ...obj,
    metadata: {
      ...(obj.metadata as JsonObject),
      resourceVersion: (current.metadata as JsonObject).resourceVersion,
    },
  }));
}

/** Deletes an object (dependents in the background); a missing one is fine. */
export async function remove(client: KubeClient, path: string): Promise<void> {
  try {
    await client.request('DELETE', path, { query: { propagationPolicy: 'Background' } });
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 404)) throw err;
  }
}

/** Polls until fn returns a value other than undefined/false, or fails after timeoutMs with the last error. */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  timeoutMs = 60_000,
  intervalMs = 500,
): Promise<T> {
  const start = Date.now();
  let last: unknown = null;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() - start > timeoutMs) {
      throw new Error(`timed out waiting for ${what}${last ? `: ${messageOf(last)}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
