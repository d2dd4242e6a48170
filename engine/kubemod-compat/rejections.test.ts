// KubeMod-compatibility suite, rejections and DELETE: each case mirrors a behaviour pinned down by KubeMod's own tests
// or source (kubemod/kubemod core/modrulestore.go DetermineRejections, core/dragnetwebhook.go,
// core/podbindingwebhook.go). The rules and objects here are our own; the comment on each case names what it mirrors.
import { JsonObject } from '../../util/json';
import { NODE_REF_ANNOTATION } from '../../rule/types';
import { validateModRule } from '../../rule/validate';
import {
  deployment,
  isDeployment,
  isPod,
  labels,
  modrule,
  node,
  parseRule,
  patchRule,
  pod,
  run,
  service,
  withChanges,
} from './testing';

// Reject (DetermineRejections) and DELETE

describe('KubeMod rejections', () => {
  const rejectExternal = (message: string | null): string =>
    modrule(
      'no-external-ips',
      `type: Reject\n${message === null ? '' : `rejectMessage: '${message}'\n`}match:\n  - select: '$.kind'\n    matchValue: Service\n  - select: '$.spec.externalIPs[*]'\n    matchFor: All\n    matchRegex: '^123\\.45\\.67\\.'\n    negate: true`,
    );

  // malicious-reject-service-*.txt: the message is the rendered rejectMessage.
  test('rendered rejectMessage', () => {
    const out = run([rejectExternal('IPs {{ .Target.spec.externalIPs }} in {{ .Namespace }}')], service);
    expect(out.allowed).toBe(false);
    expect(out.patch).toEqual([]);
    expect(out.rejections).toEqual([
      {
        rule: { namespace: 'default', name: 'no-external-ips' },
        message: 'IPs [123.45.67.10 23.45.67.89] in default',
      },
    ]);
  });

  // No rejectMessage: only the rule name (DetermineRejections appends GetNamespacedName()).
  test('no rejectMessage', () => {
    expect(run([rejectExternal(null)], service).rejections[0].message).toBe('');
  });

  // bad-reject-message-2 (malicious-reject-service-4.txt): a message failing at run time still rejects.
  test('a rejectMessage failing at run time still rejects', () => {
    const out = run([rejectExternal('{{ .Target.spec.externalIPs.nope.deeper }}')], service);
    expect(out.allowed).toBe(false);
    expect(out.rejections[0].message).toBe('');
  });

  // bad-reject-message-1: "template: rejectMessage:1: unclosed action" — refused when stored.
  test('a rejectMessage that does not parse is a validation problem', () => {
    const problems = validateModRule(parseRule(rejectExternal('{{ .Target')));
    expect(problems.map((p) => p.field)).toEqual(['spec.rejectMessage']);
    // Go: "template: rejectMessage:1: unclosed action"; we add the column (docs/templates.md).
    expect(problems[0].message).toMatch(/template: rejectMessage:1:\d+: unclosed action/);
  });

  // dragnetwebhook.go: CalculatePatch first, then DetermineRejections(patchedJSON).
  test('Reject rules see the patched object', () => {
    const out = run(
      [
        patchRule(
          'label',
          isDeployment,
          `  - op: add\n    path: /metadata/labels/exposed\n    value: 'yes-sir'`,
        ),
        modrule('no-exposed', `type: Reject\nmatch:\n  - select: '$.metadata.labels.exposed'`),
      ],
      deployment,
    );
    expect(out.allowed).toBe(false);
    expect(out.rejections.map((r) => r.rule.name)).toEqual(['no-exposed']);
  });

  test('every matching Reject rule is reported', () => {
    const out = run(
      [
        rejectExternal('one'),
        modrule('also', `type: Reject\nmatch:\n  - select: '$.kind'\n    matchValue: Service`),
      ],
      service,
    );
    expect(out.rejections.map((r) => r.rule.name).sort()).toEqual(['also', 'no-external-ips']);
  });

  // syntheticRefs.node (podbindingwebhook.go + patch-33): Pods annotated with a node see its manifest.
  test('syntheticRefs.node for Pods bound to a known node', () => {
    const bound = withChanges(pod, (p) => {
      ((p.metadata as JsonObject).annotations as JsonObject)[NODE_REF_ANNOTATION] = 'worker-1';
    });
    const rule = modrule(
      'region',
      `type: Patch\nadmissionOperations: [UPDATE]\n${isPod}\n  - select: '$.syntheticRefs.node.metadata.labels'\npatch:\n  - op: add\n    path: /metadata/labels/topology.kubernetes.io~1region\n    value: '"{{ index .Target.syntheticRefs.node.metadata.labels "topology.kubernetes.io/region" }}"'`,
    );
    const out = run([rule], bound, { operation: 'UPDATE', oldObject: pod, cluster: [node] });
    expect(labels(out.object)['topology.kubernetes.io/region']).toBe('eu-west-1');
    // Without the node manifest, the match item on syntheticRefs.node has no result.
    expect(run([rule], bound, { operation: 'UPDATE', oldObject: pod }).patch).toEqual([]);
    // admissionOperations [UPDATE]: CREATE does not run it.
    expect(run([rule], bound, { cluster: [node] }).patch).toEqual([]);
  });

  // dragnetwebhook.go: on DELETE the old object is matched.
  test('DELETE matches the old object; default operations exclude DELETE', () => {
    const guard = (ops: string): string =>
      modrule(
        'guard',
        `type: Reject\n${ops}rejectMessage: 'keep {{ .Target.metadata.name }}'\n${isDeployment}`,
      );
    const del = run([guard('admissionOperations: [DELETE]\n')], null, {
      operation: 'DELETE',
      oldObject: deployment,
    });
    expect(del.allowed).toBe(false);
    expect(del.rejections[0].message).toBe('keep nginx');
    expect(run([guard('')], null, { operation: 'DELETE', oldObject: deployment }).allowed).toBe(true);
  });
  // dragnetwebhook.go: CalculatePatch runs on DELETE too and DetermineRejections sees its result; the API server
  // gets no patch for a DELETE.
  test('on DELETE, DELETE Patch rules feed Reject rules; no patch is returned', () => {
    const rules = [
      patchRule(
        'mark',
        isDeployment,
        `  - op: add\n    path: /metadata/labels/protected\n    value: '"true"'`,
        'admissionOperations: [CREATE, UPDATE, DELETE]\n',
      ),
      modrule(
        'keep-protected',
        `type: Reject\nadmissionOperations: [DELETE]\nmatch:\n  - select: '$.metadata.labels.protected'\n    matchValue: 'true'`,
      ),
    ];
    const out = run(rules, null, { operation: 'DELETE', oldObject: deployment });
    expect(out.allowed).toBe(false);
    expect(out.rejections.map((r) => r.rule.name)).toEqual(['keep-protected']);
    expect(out.patch).toEqual([]);
    expect(out.object).toBeNull();
    // Without the Patch rule the stored object has no such label and the delete goes through.
    expect(run(rules.slice(1), null, { operation: 'DELETE', oldObject: deployment }).allowed).toBe(true);
  });
});
