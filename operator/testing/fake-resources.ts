import { isJsonObject, JsonObject } from '../../util/json';
import { HttpError } from './fake-http';
import { metadataOf } from '../../util/meta';

/** The resources the fake serves, as the real API server names them. */
export const FAKE_RESOURCES = {
  modrules: {
    prefix: '/apis/api.kubemod.io/v1beta1',
    namespaced: true,
    kind: 'ModRule',
    apiVersion: 'api.kubemod.io/v1beta1',
    status: true,
  },
  namespaces: { prefix: '/api/v1', namespaced: false, kind: 'Namespace', apiVersion: 'v1', status: true },
  nodes: { prefix: '/api/v1', namespaced: false, kind: 'Node', apiVersion: 'v1', status: true },
  pods: { prefix: '/api/v1', namespaced: true, kind: 'Pod', apiVersion: 'v1', status: true },
  secrets: { prefix: '/api/v1', namespaced: true, kind: 'Secret', apiVersion: 'v1', status: false },
  events: { prefix: '/api/v1', namespaced: true, kind: 'Event', apiVersion: 'v1', status: false },
  configmaps: { prefix: '/api/v1', namespaced: true, kind: 'ConfigMap', apiVersion: 'v1', status: false },
  replicasets: {
    prefix: '/apis/apps/v1',
    namespaced: true,
    kind: 'ReplicaSet',
    apiVersion: 'apps/v1',
    status: true,
  },
  deployments: {
    prefix: '/apis/apps/v1',
    namespaced: true,
    kind: 'Deployment',
    apiVersion: 'apps/v1',
    status: true,
  },
  endpointslices: {
    prefix: '/apis/discovery.k8s.io/v1',
    namespaced: true,
    kind: 'EndpointSlice',
    apiVersion: 'discovery.k8s.io/v1',
    status: false,
  },
  jobs: { prefix: '/apis/batch/v1', namespaced: true, kind: 'Job', apiVersion: 'batch/v1', status: true },
  cronjobs: {
    prefix: '/apis/batch/v1',
    namespaced: true,
    kind: 'CronJob',
    apiVersion: 'batch/v1',
    status: true,
  },
  mutatingwebhookconfigurations: {
    prefix: '/apis/admissionregistration.k8s.io/v1',
    namespaced: false,
    kind: 'MutatingWebhookConfiguration',
    apiVersion: 'admissionregistration.k8s.io/v1',
    status: false,
  },
  validatingwebhookconfigurations: {
    prefix: '/apis/admissionregistration.k8s.io/v1',
    namespaced: false,
    kind: 'ValidatingWebhookConfiguration',
    apiVersion: 'admissionregistration.k8s.io/v1',
    status: false,
  },
  mutatingadmissionpolicies: {
    prefix: '/apis/admissionregistration.k8s.io/v1',
    namespaced: false,
    kind: 'MutatingAdmissionPolicy',
    apiVersion: 'admissionregistration.k8s.io/v1',
    status: false,
  },
  mutatingadmissionpolicybindings: {
    prefix: '/apis/admissionregistration.k8s.io/v1',
    namespaced: false,
    kind: 'MutatingAdmissionPolicyBinding',
    apiVersion: 'admissionregistration.k8s.io/v1',
    status: false,
  },
  validatingadmissionpolicies: {
    prefix: '/apis/admissionregistration.k8s.io/v1',
    namespaced: false,
    kind: 'ValidatingAdmissionPolicy',
    apiVersion: 'admissionregistration.k8s.io/v1',
    status: false,
  },
  validatingadmissionpolicybindings: {
    prefix: '/apis/admissionregistration.k8s.io/v1',
    namespaced: false,
    kind: 'ValidatingAdmissionPolicyBinding',
    apiVersion: 'admissionregistration.k8s.io/v1',
    status: false,
  },
} as const;

export type FakeResource = keyof typeof FAKE_RESOURCES;

/** What a request path names: a resource, optionally in a namespace, optionally one object and a subresource. */
export interface Route {
  resource: FakeResource;
  namespace: string | null;
  name: string | null;
  subresource: string | null;
}

/** The route of a request path, or a 404 HttpError (also for the resources `unserved`). */
export function routeOf(path: string, unserved: ReadonlySet<FakeResource> = new Set()): Route {
  const entries = (
    Object.entries(FAKE_RESOURCES) as Array<[FakeResource, (typeof FAKE_RESOURCES)[FakeResource]]>
  ).filter(([resource]) => !unserved.has(resource));
  const segsFor = (prefix: string) =>
    path.startsWith(prefix + '/')
      ? path
          .slice(prefix.length + 1)
          .split('/')
          .map(decodeURIComponent)
      : null;
  // Namespaced paths first: /api/v1/namespaces/NS/pods is not the namespace "NS".
  for (const [resource, def] of entries) {
    const segs = segsFor(def.prefix);
    if (segs && def.namespaced && segs[0] === 'namespaces' && segs[2] === resource) {
      return { resource, namespace: segs[1], name: segs[3] ?? null, subresource: segs[4] ?? null };
    }
  }
  for (const [resource, def] of entries) {
    const segs = segsFor(def.prefix);
    if (segs && segs[0] === resource && (!def.namespaced || segs.length === 1)) {
      return { resource, namespace: null, name: segs[1] ?? null, subresource: segs[2] ?? null };
    }
  }
  throw new HttpError(404, 'NotFound', `no route for ${path}`);
}

/** The `fieldSelector` and `labelSelector` of a list or watch request (only `=` terms, as the operator sends them). */
export interface Selector {
  fields: Record<string, string>;
  labels: Record<string, string>;
}

function equalityTerms(selector: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (selector ?? '').split(',')) {
    const [k, v] = part.split('=');
    if (k && v !== undefined) out[k] = v;
  }
  return out;
}

/** A request's selectors, from its query parameters. */
export function parseSelector(query: Record<string, string>): Selector {
  return { fields: equalityTerms(query.fieldSelector), labels: equalityTerms(query.labelSelector) };
}

/** Whether an object belongs to a route's namespace and passes a request's selectors. */
export function matches(obj: JsonObject, route: Route, selector: Selector): boolean {
  const m = metadataOf(obj);
  if (
    route.namespace !== null &&
    FAKE_RESOURCES[route.resource].namespaced &&
    m.namespace !== route.namespace
  )
    return false;
  const { fields, labels } = selector;
  if (fields['metadata.name'] !== undefined && m.name !== fields['metadata.name']) return false;
  if (fields['metadata.namespace'] !== undefined && m.namespace !== fields['metadata.namespace'])
    return false;
  const have = isJsonObject(m.labels) ? m.labels : {};
  return Object.entries(labels).every(([k, v]) => have[k] === v);
}

/**
 * The APIResourceList of a group version path (/api/v1, /apis/GROUP/VERSION) without the resources `unserved`, or
 * null for other paths.
 */
export function discoveryOf(path: string, unserved: ReadonlySet<FakeResource>): JsonObject | null {
  if (path !== '/api/v1' && !/^\/apis\/[^/]+\/[^/]+$/.test(path)) return null;
  const defs = Object.entries(FAKE_RESOURCES).filter(
    ([name, d]) => d.prefix === path && !unserved.has(name as FakeResource),
  );
  if (defs.length === 0)
    throw new HttpError(404, 'NotFound', `the server could not find the requested resource`);
  return {
    kind: 'APIResourceList',
    groupVersion: path === '/api/v1' ? 'v1' : path.slice('/apis/'.length),
    resources: defs.map(([name, d]) => ({
      name,
      kind: d.kind,
      namespaced: d.namespaced,
      verbs: ['get', 'list', 'watch'],
    })),
  };
}
