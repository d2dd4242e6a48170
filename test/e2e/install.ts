import { JsonObject } from '../../util/json';
import { KubeClient } from '../../kube/kube';
import { bundleObjects, ClusterLedger, waitFor } from './cluster';

const CRD = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/modrules.api.kubemod.io';

/** Whether an object is one of the two webhook configurations (the e2e suites install their own, called by URL). */
export const isWebhookConfiguration = (obj: JsonObject): boolean =>
  obj.kind === 'MutatingWebhookConfiguration' || obj.kind === 'ValidatingWebhookConfiguration';

/**
 * bundle.yaml as a user applies it, every object (Kubernetes 1.30+ serves all of their APIs), except the webhook
 * configurations: they call the Service, which has no pods here. Resolves once the ModRule CRD is established.
 */
export async function installBundle(admin: KubeClient, ledger: ClusterLedger): Promise<void> {
  for (const obj of bundleObjects().filter((o) => !isWebhookConfiguration(o))) await ledger.apply(obj);
  await waitFor('the ModRule CRD to be established', async () => {
    const got = await admin.request('GET', CRD);
    const conditions = ((got.status as JsonObject | undefined)?.conditions ?? []) as JsonObject[];
    return conditions.some((c) => c.type === 'Established' && c.status === 'True');
  });
  // Established is not yet served when a CRD of that name was deleted a moment before (the suite before).
  await waitFor('ModRules to be served', async () => {
    await admin.request('GET', '/apis/api.kubemod.io/v1beta1/modrules', { query: { limit: 1 } });
    return true;
  });
}

/** A bound token of a ServiceAccount (TokenRequest API), as the kubelet mounts one into a pod. */
export async function serviceAccountToken(
  admin: KubeClient,
  namespace: string,
  name: string,
  seconds = 3600,
): Promise<string> {
  const path = `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`;
  const answer = await waitFor(`a token for ServiceAccount ${namespace}/${name}`, () =>
    admin.request('POST', path, {
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: seconds },
      },
    }),
  );
  return String((answer.status as JsonObject).token);
}
