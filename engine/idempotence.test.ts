import { JsonObject } from '../util/json';
import { analyzeModRule, CompiledRule } from '../rule/compile';
import { idempotenceWarning } from './idempotence';
import { sampleObjects } from './samples';

function rule(spec: JsonObject): CompiledRule {
  const { rule: compiled, problems } = analyzeModRule({
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: 'r', namespace: 'team-a' },
    spec,
  });
  if (!compiled) throw new Error(JSON.stringify(problems));
  return compiled;
}
const POD = { select: '$.kind', matchValue: 'Pod' };
const SIDECAR = { op: 'add', path: '/spec/containers/-', value: 'name: log-agent\nimage: busybox' };

describe('idempotenceWarning', () => {
  it('warns about an unguarded append, with the path it changes again, on a built-in sample', () => {
    expect(idempotenceWarning(rule({ type: 'Patch', match: [POD], patch: [SIDECAR] }))).toMatch(
      /^not idempotent: applied to its own result it changes \/spec\/containers\/5 again \(sample Pod web-x2x5k\)/,
    );
  });

  it('is quiet for the guarded append, a label, and a mirror rewrite filtered on the source registry', () => {
    const guard = { select: '$.spec.containers[*].name', matchValue: 'log-agent', negate: true };
    expect(
      idempotenceWarning(rule({ type: 'Patch', match: [POD, guard], patch: [SIDECAR] })),
    ).toBeUndefined();
    expect(
      idempotenceWarning(
        rule({ type: 'Patch', match: [POD], patch: [{ op: 'add', path: '/metadata/labels/a', value: 'b' }] }),
      ),
    ).toBeUndefined();
    const mirror = {
      op: 'replace',
      select: '$.spec["initContainers","containers"][? imageRegistry(@.image) == "docker.io"].image',
      path: '/spec/#0/#1/image',
      value: '{{ imageWithRegistry "mirror.example.com" .SelectedItem }}',
    };
    expect(idempotenceWarning(rule({ type: 'Patch', match: [POD], patch: [mirror] }))).toBeUndefined();
  });

  it('catches a pull-through prefix not filtered on its source (prefixed again at every change)', () => {
    const prefix = {
      op: 'replace',
      select: '$.spec.containers[*].image',
      path: '/spec/containers/#0/image',
      value: '{{ imageWithRegistry "harbor.example.com/hub" .SelectedItem }}',
    };
    expect(idempotenceWarning(rule({ type: 'Patch', match: [POD], patch: [prefix] }))).toMatch(
      /changes \/spec\/containers\/0\/image again/,
    );
  });

  it('runs on the objects given; a variant skips the template it marked, the Pod rule warns', () => {
    const appendToLabelled = rule({
      type: 'Patch',
      podControllers: ['Deployment'],
      match: [POD, { select: '$.metadata.labels.sidecar', matchValue: 'yes' }],
      patch: [SIDECAR],
    });
    expect(idempotenceWarning(appendToLabelled)).toBeUndefined(); // no sample carries the label
    const [pod, deployment] = sampleObjects('team-a').map((o) => JSON.parse(JSON.stringify(o)) as JsonObject);
    (((deployment.spec as JsonObject).template as JsonObject).metadata as JsonObject).labels = {
      sidecar: 'yes',
    };
    // The Deployment's template gets the sidecar and the rule's marker: seen again, it is left alone.
    expect(idempotenceWarning(appendToLabelled, [deployment])).toBeUndefined();
    // A bare pod has no marker: the Pod rule appends at every change.
    (pod.metadata as JsonObject).labels = { sidecar: 'yes' };
    expect(idempotenceWarning(appendToLabelled, [deployment, pod])).toMatch(
      /changes \/spec\/containers\/5 again \(Pod web-x2x5k\)/,
    );
  });

  it('says nothing of Reject rules', () => {
    expect(idempotenceWarning(rule({ type: 'Reject', match: [POD] }))).toBeUndefined();
  });
});
