// KubeMod-compatibility suite, the last-applied-configuration annotation: each case mirrors a behaviour pinned down by
// KubeMod's own tests or source (kubemod/kubemod core/modrulestore.go CalculatePatch, which applies each rule's patch
// to the annotation too). The rules and objects here are our own; the comment on each case names what it mirrors.
import { JsonObject } from '../../util/json';
import { LAST_APPLIED_ANNOTATION } from '../../rule/types';
import {
  deployment,
  get,
  isDeployment,
  isPod,
  labels,
  lastApplied,
  patchRule,
  pod,
  run,
  sortKeys,
} from './testing';

describe('KubeMod last-applied-configuration handling', () => {
  test('written back as compact JSON with sorted keys', () => {
    const out = run(
      [patchRule('p', isDeployment, `  - op: add\n    path: /metadata/labels/zeta\n    value: z`)],
      deployment,
    );
    const text = (get(out.object, 'metadata.annotations') as JsonObject)[LAST_APPLIED_ANNOTATION] as string;
    expect(text.trimEnd()).toBe(JSON.stringify(sortKeys(lastApplied(out.object))));
    expect(labels(lastApplied(out.object))).toEqual({ app: 'nginx', zeta: 'z' });
  });

  test('untouched when no rule applies', () => {
    const out = run(
      [patchRule('p', isPod, `  - op: add\n    path: /metadata/labels/x\n    value: y`)],
      deployment,
    );
    expect(out.patch).toEqual([]);
  });

  test('not created on objects that have none', () => {
    const out = run([patchRule('p', isPod, `  - op: add\n    path: /metadata/labels/x\n    value: y`)], pod);
    expect(get(out.object, `metadata.annotations`)).toEqual({ 'ref.kubemod.io/inject-node-ref': 'true' });
  });

  test('an operation that does not apply to the annotation leaves it, the object is still patched', () => {
    const out = run(
      [patchRule('p', isDeployment, `  - op: replace\n    path: /spec/revisionHistoryLimit\n    value: '3'`)],
      deployment,
    );
    expect(get(out.object, 'spec.revisionHistoryLimit')).toBe(3);
    expect(out.patch.some((op) => op.path.includes('last-applied'))).toBe(false);
  });
});

// CalculatePatch writes its patched copy of the annotation back after all rules, even over a rule that removed it.
describe('a rule removing last-applied-configuration', () => {
  const removeIt = `  - op: remove\n    path: /metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration`;

  test('is overridden when the rules changed what last-applied records (as KubeMod)', () => {
    const out = run(
      [patchRule('p', isDeployment, `${removeIt}\n  - op: add\n    path: /metadata/labels/x\n    value: z`)],
      deployment,
    );
    expect(labels(lastApplied(out.object))).toEqual({ app: 'nginx', x: 'z' });
  });

  // KubeMod would put the unchanged annotation back; we leave an unchanged annotation alone (docs/engine.md).
  test('removes it when nothing it records changed (our own choice)', () => {
    const out = run([patchRule('p', isDeployment, removeIt)], deployment);
    expect(get(out.object, 'metadata.annotations')).toEqual({});
  });
});
