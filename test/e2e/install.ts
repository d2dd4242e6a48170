import { JsonObject } from '../../util/json';
import { KubeClient } from '../../operator/kube';
import { apply, bundleObjects, collectionOf, waitFor } from './cluster';

/**
 * bundle.yaml on a throw-away control plane, as a user applies it, but for the webhook configurations (the caller
 * registers them by URL) and namespaces other than the operator's; resolves once the ModRule CRD is established.
 */
export async function installBundle(admin: KubeClient, operatorNamespace = 'kubemod-system'): Promise<void> {
  for (const obj of bundleObjects()) {
    if (obj.kind === 'MutatingWebhookConfiguration' || obj.kind === 'ValidatingWebhookConfiguration')
      continue;
    if (obj.kind === 'Namespace' && (obj.metadata as JsonObject).name !== operatorNamespace) continue;
    await apply(admin, collectionOf(obj), obj);
  }
  await waitFor('the ModRule CRD to be established', async () => {
    const crd = await admin.request(
      'GET',
      '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/modrules.api.kubemod.io',
    );
    const conditions = ((crd.status as JsonObject | undefined)?.conditions ?? []) as JsonObject[];
    return conditions.some((c) => c.type === 'Established' && c.status === 'True');
  });
}
