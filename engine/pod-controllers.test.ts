import { JsonObject, JsonValue } from '../util/json';
import { loadFixture, loadWorkloads } from '../fixtures/load';
import { markerAnnotation } from '../rule/pod-controllers';
import { admitChecked, storeFromYaml } from './testing';
import { explainAdmission } from './explain';

// The evidence: one Pod rule with podControllers ["*"] (a sidecar appended with /spec/containers/-, a label,
// a Reject for containers without limits), applied to each controller and a bare Pod.
const RULES = `
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: sidecar}
spec:
  type: Patch
  podControllers: ["*"]
  match:
    - select: $.kind
      matchValue: Pod
  patch:
    - op: add
      path: /spec/containers/-
      value: |-
        name: log-agent
        image: busybox:1.36
        resources: {limits: {memory: 32Mi}}
    - op: add
      path: /metadata/labels/injected-into
      value: '{{ .Target.kind }}-in-{{ .Namespace }}{{ with .Controller }}-by-{{ .kind }}{{ end }}'
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: require-limits}
spec:
  type: Reject
  podControllers: ["*"]
  rejectMessage: 'container(s) without limits in {{ .Target.metadata.labels.app }}: {{ range .Target.spec.containers }}{{ if not .resources.limits }}{{ .name }} {{ end }}{{ end }}'
  match:
    - select: $.kind
      matchValue: Pod
    - select: '$.spec.containers[? isUndefined(@.resources.limits)]'
`;

/** The Deployment fixture with limits on every container (its nginx has none). */
function limitedDeployment(): JsonObject {
  const d = loadFixture('deployment');
  const spec = ((d.spec as JsonObject).template as JsonObject).spec as JsonObject;
  for (const c of spec.containers as JsonObject[]) c.resources = { limits: { memory: '64Mi' } };
  return d;
}

const workloads: Record<string, JsonObject> = { Deployment: limitedDeployment(), ...loadWorkloads() };
const MARKER = markerAnnotation('default', 'sidecar');

/** Where each kind keeps its pod template. */
function templateOf(obj: JsonObject): JsonObject {
  let t: JsonValue = obj.kind === 'CronJob' ? (obj.spec as JsonObject).jobTemplate : obj;
  t = ((t as JsonObject).spec as JsonObject).template;
  return t as JsonObject;
}

describe('a Pod rule with podControllers on every controller and a bare Pod', () => {
  const store = storeFromYaml(RULES);

  it.each(Object.keys(workloads))('patches the %s template at the right depth, once', (kind) => {
    const out = admitChecked(store, workloads[kind]);
    expect(out.allowed).toBe(true);
    const template = templateOf(out.object as JsonObject);
    const spec = template.spec as JsonObject;
    const names = (spec.containers as JsonObject[]).map((c) => c.name);
    expect(names[names.length - 1]).toBe('log-agent');
    expect(names.filter((n) => n === 'log-agent')).toHaveLength(1);
    const meta = template.metadata as JsonObject;
    expect((meta.labels as JsonObject)['injected-into']).toBe(`Pod-in-default-by-${kind}`);
    expect((meta.annotations as JsonObject)[MARKER]).toBe('default/sidecar');
    // Nothing lands where the pod's own fields would be.
    expect((out.object?.metadata as JsonObject).labels).toEqual(
      workloads[kind].metadata && (workloads[kind].metadata as JsonObject).labels,
    );
    expect(out.patched).toEqual([{ namespace: 'default', name: 'sidecar' }]);
  });

  it('patches a bare pod as before, and a pod of a patched template not again', () => {
    const bare = loadFixture('pod');
    const once = admitChecked(store, bare);
    const containers = ((once.object as JsonObject).spec as JsonObject).containers as JsonObject[];
    expect(containers.map((c) => c.name)).toEqual(['nginx', 'log-agent']);
    expect(((once.object?.metadata as JsonObject).labels as JsonObject)['injected-into']).toBe(
      'Pod-in-default',
    );

    // What the ReplicaSet controller creates from the patched Deployment: the template, marker included.
    const admitted = admitChecked(store, limitedDeployment());
    expect(admitted.allowed).toBe(true);
    const deployment = admitted.object as JsonObject;
    const template = templateOf(deployment);
    const pod: JsonObject = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { ...(template.metadata as JsonObject), name: 'nginx-abc12', namespace: 'default' },
      spec: template.spec as JsonObject,
    };
    const again = admitChecked(store, pod);
    expect(again.patch).toEqual([]);
    expect(again.patched).toEqual([]);
    expect(again.allowed).toBe(true);
  });

  it('leaves a template it marked alone when it comes back (an UPDATE, a ReplicaSet or Job made from it)', () => {
    const deployment = admitChecked(store, limitedDeployment()).object as JsonObject;
    const update = admitChecked(store, deployment, { operation: 'UPDATE', oldObject: deployment });
    expect(update.patch).toEqual([]);
    // What the Deployment controller makes of it: a ReplicaSet it controls, from the marked template.
    const rs: JsonObject = {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: {
        name: 'nginx-5d8f',
        namespace: 'default',
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'Deployment', name: 'nginx', uid: 'u', controller: true },
        ],
      },
      spec: {
        replicas: 2,
        selector: (deployment.spec as JsonObject).selector,
        template: templateOf(deployment),
      },
    };
    expect(admitChecked(store, rs).patched).toEqual([]);
    // A ReplicaSet of a Deployment from before the rule (no marker) is left to the Deployment too: changing its
    // template would make the Deployment controller create new ReplicaSets for ever.
    const older = loadWorkloads().ReplicaSet;
    (older.metadata as JsonObject).ownerReferences = (rs.metadata as JsonObject).ownerReferences;
    expect(admitChecked(store, older).patched).toEqual([]);
    expect(admitChecked(store, loadWorkloads().ReplicaSet).patched).toEqual([
      { namespace: 'default', name: 'sidecar' },
    ]);
  });

  it('still patches pods of templates it did not patch (controllers created before the rule)', () => {
    const pod = loadFixture('pod'); // a ReplicaSet's pod without the marker
    expect(admitChecked(store, pod).patched).toEqual([{ namespace: 'default', name: 'sidecar' }]);
  });

  it("rejects the controller itself when a container has no limits, with the rule's message", () => {
    const deployment = loadFixture('deployment'); // nginx has no limits
    const out = admitChecked(store, deployment);
    expect(out.allowed).toBe(false);
    expect(out.rejections).toEqual([
      {
        rule: { namespace: 'default', name: 'require-limits' },
        message: 'container(s) without limits in nginx: nginx ',
      },
    ]);
  });

  it('shows the variants in explanations, by controller kind', () => {
    const snapshot = store.snapshot();
    const e = explainAdmission(
      { operation: 'CREATE', object: workloads.Job, oldObject: null, namespace: 'default' },
      snapshot,
      store.allRules(),
    );
    const matched = e.rules.filter((r) => r.status === 'matched').map((r) => r.rule);
    expect(matched).toEqual(['default/sidecar (Job)']);
    expect(e.rules.map((r) => r.rule)).toContain('default/require-limits (CronJob)');
    const job = e.rules.find((r) => r.rule === 'default/sidecar (Job)');
    // The marker first, then the rule's own operations.
    expect(job?.operations?.map((o) => o.path)).toEqual([
      `/spec/template/metadata/annotations/${MARKER.replace('/', '~1')}`,
      '/spec/template/spec/containers/-',
      '/spec/template/metadata/labels/injected-into',
    ]);
  });

  it('counts a ModRule once, however many variants it has', () => {
    expect(store.snapshot().ruleCount).toBe(2);
    expect(store.allRules()).toHaveLength(16);
    store.deleteRule('default', 'sidecar');
    expect(store.allRules()).toHaveLength(8);
    expect(store.snapshot().ruleCount).toBe(1);
  });
});
