import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { isJsonObject, JsonObject } from '../../json/value';
import { KubeApiError, KubeClient } from '../../operator/kube';

/** Where the API server can reach the operator that the e2e suite runs on this machine. */
export interface E2eSettings {
  /** Host/IP the cluster's API server can reach this process at (kind: the docker network gateway). */
  webhookHost: string;
  webhookPort: number;
  /** Namespace for cluster-wide rules and the certificate Secret. */
  clusterNamespace: string;
}

/** Reads E2E_WEBHOOK_HOST, E2E_WEBHOOK_PORT, E2E_CLUSTER_NAMESPACE. */
export function e2eSettings(env: Record<string, string | undefined> = process.env): E2eSettings {
  return {
    webhookHost: env.E2E_WEBHOOK_HOST || '172.18.0.1',
    webhookPort: Number(env.E2E_WEBHOOK_PORT || 9443),
    clusterNamespace: env.E2E_CLUSTER_NAMESPACE || 'kubemod-system',
  };
}

const ROOT = join(__dirname, '..', '..');

function readManifests(relative: string): JsonObject[] {
  const file = join(ROOT, relative);
  if (!existsSync(file)) return [];
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((d) => d.toJSON() as unknown)
    .filter(isJsonObject);
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
 * The two webhook configurations from config/ (or minimal ones), rewritten for a test run: every webhook calls
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
  const mutating = readManifests('config/webhook/mutating_webhook_configuration.yaml').find(
    (m) => m.kind === 'MutatingWebhookConfiguration',
  ) ?? {
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
  const validating = readManifests('config/webhook/validating_webhook_configuration.yaml').find(
    (m) => m.kind === 'ValidatingWebhookConfiguration',
  ) ?? {
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

/** Creates an object, or replaces it (keeping its resourceVersion) when it exists. */
export async function apply(client: KubeClient, collection: string, obj: JsonObject): Promise<JsonObject> {
  try {
    return await client.request('POST', collection, { body: obj });
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 409)) throw err;
    const path = `${collection}/${String((obj.metadata as JsonObject).name)}`;
    const current = await client.request('GET', path);
    const meta = {
      ...(obj.metadata as JsonObject),
      resourceVersion: (current.metadata as JsonObject).resourceVersion,
    };
    return client.request('PUT', path, { body: { ...obj, metadata: meta } });
  }
}

/** Deletes an object; a missing one is fine. */
export async function remove(client: KubeClient, path: string): Promise<void> {
  try {
    await client.request('DELETE', path);
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 404)) throw err;
  }
}

/** Polls until fn returns a value other than undefined/false, or fails after timeoutMs with the last error. */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  timeoutMs = 60_000,
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
      throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}
