import { closest, editDistance } from './suggest';

const KINDS = [
  'ConfigMap',
  'Deployment',
  'DaemonSet',
  'Pod',
  'PodTemplate',
  'Secret',
  'Service',
  'StatefulSet',
];

describe('editDistance', () => {
  it('counts edits, an adjacent transposition as one, ignoring case', () => {
    expect(editDistance('Deploymnet', 'Deployment')).toBe(1);
    expect(editDistance('deployment', 'Deployment')).toBe(0);
    expect(editDistance('Pod', 'Pods')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
  });

  it('gives up past max', () => {
    expect(editDistance('ConfigMap', 'StatefulSet', 2)).toBe(3);
    expect(editDistance('a', 'abcdef', 2)).toBe(3);
  });
});

describe('closest', () => {
  it('suggests near misses of known words, a case difference first', () => {
    expect(closest('Deploymnet', KINDS)).toBe('Deployment');
    expect(closest('deployment', KINDS)).toBe('Deployment');
    expect(closest('configmap', KINDS)).toBe('ConfigMap');
    expect(closest('Deployments', KINDS)).toBe('Deployment');
    expect(closest('Secrte', KINDS)).toBe('Secret');
    expect(closest('Servce', KINDS)).toBe('Service');
  });

  it('suggests nothing for a word far from all of them, or one of them', () => {
    expect(closest('Certificate', KINDS)).toBeUndefined();
    expect(closest('Gadget', KINDS)).toBeUndefined();
    expect(closest('Pod', KINDS)).toBeUndefined();
    expect(closest('Xyz', [])).toBeUndefined();
  });

  it('takes the nearest, and the first of equals', () => {
    expect(closest('Pd', KINDS)).toBe('Pod');
    expect(closest('StatfulSet', KINDS)).toBe('StatefulSet');
    expect(closest('ab', ['ax', 'ay'])).toBe('ax');
  });
});
