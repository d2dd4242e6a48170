import { randomBytes } from 'node:crypto';
import { JsonObject } from '../../util/json';
import { KubeApiError } from '../../kube/kube';
import { CLUSTER_SCOPED_KINDS } from '../../rule/kinds';
import { discoverResources } from '../../operator/audit/discovery';
import { DEFAULT_OWNER_KINDS } from '../../operator/references/owners';
import { RunningOperator } from '../../operator/start';
import { waitFor } from './cluster';
import { metricSum, scrape } from './metrics';
import { CLUSTER_NS, OperatorHarness, operatorHarness } from './operator-harness';
import { describeCluster, itOwn } from './target';

/*
 * Which kinds are cluster-scoped, as the API server's discovery says (docs/references.md): the offline list holds every
 * cluster-scoped kind of 1.37; a cluster-scoped custom resource is refused to a namespaced rule at admission (and a
 * rule admitted before its CRD came is reported invalid once it does), read cluster-wide by a cluster-namespace
 * rule, and followed as an owner (a namespaced object may have a cluster-scoped owner) with one list and no GET loop.
 */

const run = randomBytes(3).toString('hex');
const SCOPE = `modrule-e2e-${run}`;
const NS = `refs-scope-${run}`;
const GROUP = `e2e${run}.example.com`;
const PLURAL = `gadgets${run}`;
const KIND = `Gadget${run}`;
const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
const GADGETS = `/apis/${GROUP}/v1/${PLURAL}`;
const MODRULES = (ns: string) => `/apis/api.kubemod.io/v1beta1/namespaces/${ns}/modrules`;
const measured: Record<string, string> = {};
jest.setTimeout(300_000);

const modRule = (namespace: string, name: string, spec: JsonObject): JsonObject => ({
  apiVersion: 'api.kubemod.io/v1beta1',
  kind: 'ModRule',
  metadata: { name, namespace },
  spec: { type: 'Patch', ...spec },
});
/** A rule copying the color label of the Gadget `blue` onto ConfigMaps named `prefix`*. */
const readsGadget = (namespace: string, name: string, prefix: string): JsonObject =>
  modRule(namespace, name, {
    ...(namespace === CLUSTER_NS ? { targetNamespaceRegex: `^${NS}$` } : {}),
    references: [{ name: 'gadget', apiVersion: `${GROUP}/v1`, kind: KIND, objectName: 'blue' }],
    match: [
      { select: '$.metadata.name', matchRegex: `^${prefix}` },
      { select: '$.syntheticRefs.gadget.metadata.labels.color' },
    ],
    patch: [
      {
        op: 'add',
        path: '/metadata/labels/color',
        value: '{{ .Target.syntheticRefs.gadget.metadata.labels.color }}',
      },
    ],
  });
const conditionOf = (rule: JsonObject, type: string) =>
  (((rule.status as JsonObject | undefined)?.conditions ?? []) as JsonObject[]).find((c) => c.type === type);
const labelsOf = (o: JsonObject) => ((o.metadata as JsonObject).labels ?? {}) as JsonObject;

describeCluster(`cluster-scoped kinds from discovery (namespace ${NS})`, () => {
  let h: OperatorHarness;
  let op: RunningOperator;
  let gadget: JsonObject;

  beforeAll(async () => {
    h = await operatorHarness(SCOPE);
    await h.namespace(NS);
    op = await h.start({ references: { ownerKinds: [...DEFAULT_OWNER_KINDS, `${GROUP}/${KIND}`] } });
    await waitFor('the operator to be ready', async () => op.isReady());
  });

  afterAll(async () => {
    await h?.tearDown();
    process.stderr.write(`references-scope e2e:\n${JSON.stringify(measured, null, 2)}\n`);
  });

  itOwn('every cluster-scoped kind a 1.37 API server serves is in the offline list', async () => {
    const crdGroups = new Set(
      (((await h.admin.request('GET', CRDS)).items ?? []) as JsonObject[]).map(
        (c) => (c.spec as JsonObject).group,
      ),
    );
    const { resources: all, failedGroups } = await discoverResources(h.admin);
    const resources = all.filter((r) => !r.resource.includes('/')); // not subresources (nodes/proxy)
    expect(failedGroups).toEqual([]);
    const cluster = resources.filter((r) => !r.namespaced && !crdGroups.has(r.group)).map((r) => r.kind);
    expect(cluster.length).toBeGreaterThan(30);
    expect(cluster.filter((k) => !CLUSTER_SCOPED_KINDS.has(k))).toEqual([]);
    const namespaced = resources.filter((r) => r.namespaced).map((r) => r.kind);
    expect(namespaced.filter((k) => CLUSTER_SCOPED_KINDS.has(k))).toEqual([]);
  });

  it('a cluster-scoped CRD: a tenant rule admitted before it turns invalid; a new one is refused at the field', async () => {
    const early = readsGadget(NS, 'early', 'early-');
    await h.ledger.apply(early); // offline, the kind is unknown: namespaced
    const scoped = `spec.references[0].kind: Forbidden: ${KIND} is cluster-scoped; only ModRules in ${CLUSTER_NS} may read cluster-scoped objects`;
    const installed = Date.now();
    await h.ledger.apply({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `${PLURAL}.${GROUP}` },
      spec: {
        group: GROUP,
        scope: 'Cluster',
        names: { plural: PLURAL, singular: `gadget${run}`, kind: KIND, listKind: `${KIND}List` },
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
    // The operator may read them (as config/rbac/references/ asks of any kind rules read).
    await h.ledger.apply({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: `modrule-e2e-gadgets-${run}` },
      rules: [{ apiGroups: [GROUP], resources: [PLURAL], verbs: ['get', 'list', 'watch'] }],
    });
    await h.ledger.apply({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `modrule-e2e-gadgets-${run}` },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: `modrule-e2e-gadgets-${run}`,
      },
      subjects: [{ kind: 'ServiceAccount', name: 'kubemod-operator', namespace: CLUSTER_NS }],
    });
    const invalid = await waitFor('the early rule to be reported invalid', async () => {
      const r = await h.admin.request('GET', `${MODRULES(NS)}/early`);
      return conditionOf(r, 'Ready')?.reason === 'Invalid' ? r : undefined;
    });
    measured['CRD installed to the tenant rule invalid'] = `${Date.now() - installed} ms`;
    expect(conditionOf(invalid, 'Ready')).toMatchObject({
      status: 'False',
      message: expect.stringContaining(scoped),
    });

    const err = await h.admin
      .request('POST', MODRULES(NS), { body: readsGadget(NS, 'late', 'late-') })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect((err as KubeApiError).status).toBe(422);
    expect((err as KubeApiError).message).toContain(scoped);
  });

  it('a cluster-namespace rule reads a cluster-scoped custom resource cluster-wide', async () => {
    h.ledger.track(`${GADGETS}/blue`);
    gadget = await h.admin.request('POST', GADGETS, {
      body: { apiVersion: `${GROUP}/v1`, kind: KIND, metadata: { name: 'blue', labels: { color: 'blue' } } },
    });
    await h.ledger.apply(readsGadget(CLUSTER_NS, `wide-${run}`, 'wide-'));
    let n = 0;
    await waitFor('ConfigMaps labelled from the Gadget', async () => {
      const cm = await h.admin.request('POST', `/api/v1/namespaces/${NS}/configmaps`, {
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `wide-${++n}` } },
      });
      return labelsOf(cm).color === 'blue';
    });
  });

  it('a cluster-scoped owner of a namespaced object: read with one list and at most one GET, no loop', async () => {
    await h.ledger.apply(
      modRule(NS, 'owner-color', {
        match: [{ select: '$.syntheticRefs.owner.metadata.labels.color' }],
        patch: [
          {
            op: 'add',
            path: '/metadata/labels/owner-color',
            value: '{{ .Target.syntheticRefs.owner.metadata.labels.color }}',
          },
        ],
      }),
    );
    const reads = async () => {
      const text = await scrape(h.cluster);
      const by = (verb: string) =>
        metricSum(text, 'apiserver_request_total', [`resource="${PLURAL}"`, `verb="${verb}"`]);
      return { get: by('GET'), list: by('LIST') };
    };
    const before = await reads();
    let n = 0;
    const owned = () =>
      h.admin.request('POST', `/api/v1/namespaces/${NS}/configmaps`, {
        body: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: {
            name: `owned-${++n}`,
            ownerReferences: [
              {
                apiVersion: `${GROUP}/v1`,
                kind: KIND,
                name: 'blue',
                uid: (gadget.metadata as JsonObject).uid,
                controller: true,
              },
            ],
          },
        },
      });
    const started = Date.now();
    await waitFor(
      'a ConfigMap labelled from its owner',
      async () => labelsOf(await owned())['owner-color'] === 'blue',
    );
    measured['owner-color rule to the first patched ConfigMap'] = `${Date.now() - started} ms`;
    for (let i = 0; i < 10; i++) expect(labelsOf(await owned())['owner-color']).toBe('blue');
    const after = await reads();
    measured['Gadget reads for 10+ owned ConfigMaps (GET / LIST)'] =
      `${after.get - before.get} / ${after.list - before.list}`;
    expect(after.get - before.get).toBeLessThanOrEqual(1);
    expect(after.list - before.list).toBeLessThanOrEqual(1);
  });
});
