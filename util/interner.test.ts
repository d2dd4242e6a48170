import { compileModRule } from '../rule/compile';
import { compileTemplate } from '../template';
import { Interner } from './interner';

function rule(name: string, path: string): Record<string, unknown> {
  return {
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name, namespace: 'default' },
    spec: {
      type: 'Patch',
      match: [{ select: '$.spec.template.spec.containers[*].image', matchRegex: '^nginx:' }],
      patch: [{ op: 'add', path, value: '{{ fail "no name" }}' }],
    },
  };
}

describe('Interner', () => {
  it('makes a value once per key and hands the same one out', () => {
    const interner = new Interner<{ n: number }>();
    let made = 0;
    const a = interner.get('k', () => ({ n: ++made }));
    const b = interner.get('k', () => ({ n: ++made }));
    expect(b).toBe(a);
    expect(made).toBe(1);
    expect(interner.get('other', () => ({ n: ++made })).n).toBe(2);
  });

  it('keeps nothing when make throws', () => {
    const interner = new Interner<object>();
    expect(() =>
      interner.get('bad', () => {
        throw new Error('no');
      }),
    ).toThrow('no');
    expect(interner.size).toBe(0);
  });
});

describe('compiled rules share what their text shares', () => {
  it('one select and regex for rules with the same text; templates keep their own name in errors', () => {
    const a = compileModRule(rule('a', '/metadata/labels/a') as never);
    const b = compileModRule(rule('b', '/metadata/labels/b') as never);
    expect(b.match[0].select).toBe(a.match[0].select);
    expect(b.match[0].matchRegex).toBe(a.match[0].matchRegex);
    const render = (r: typeof a) => {
      const v = r.patch[0].value;
      if (v.kind !== 'template') throw new Error('expected a template');
      return () => v.template.render({ Target: { metadata: {} } });
    };
    expect(render(a)).toThrow(/\/metadata\/labels\/a/);
    expect(render(b)).toThrow(/\/metadata\/labels\/b/);
  });

  it('rules that differ only in name and patch path share their body; each keeps its own path and key', () => {
    const a = compileModRule(rule('a', '/metadata/annotations/a~1b') as never);
    const b = compileModRule(rule('b', '/metadata/annotations/c~0d') as never);
    const other = compileModRule({
      ...rule('c', '/x'),
      spec: { ...(rule('c', '/x').spec as object), executionTier: 2 },
    } as never);
    expect(b.match).toBe(a.match);
    expect(b.operations).toBe(a.operations);
    expect(other.match).not.toBe(a.match);
    expect(other.tier).toBe(2);
    expect([a.key, a.patch[0].path, b.patch[0].path]).toEqual([
      'default/a',
      '/metadata/annotations/a~1b',
      '/metadata/annotations/c~0d',
    ]);
    expect(a.patch[0].tokens).toEqual(['metadata', 'annotations', 'a/b']);
  });

  it('a path with placeholders reads back as written and names the template in errors', () => {
    const r = compileModRule({
      ...rule('p', '/spec/containers/#0/env/x#1y'),
      spec: {
        type: 'Patch',
        match: [{ select: '$.kind' }],
        patch: [
          {
            op: 'add',
            select: '$.spec.containers[*].env[*]',
            path: '/spec/containers/#0/env/x#1y',
            value: '{{ fail "no" }}',
          },
        ],
      },
    } as never);
    expect(r.patch[0].path).toBe('/spec/containers/#0/env/x#1y');
    const v = r.patch[0].value;
    if (v.kind !== 'template') throw new Error('expected a template');
    expect(() => v.template.render({})).toThrow(/template: \/spec\/containers\/#0\/env\/x#1y:1:\d+: /);
  });

  it('templates that differ only around a shared action render their own text and name their own errors', () => {
    const a = compileTemplate('{{ .Target.metadata.name }}-1', 'a');
    const b = compileTemplate('{{ .Target.metadata.name }}-2', 'b');
    expect(a.render({ Target: { metadata: { name: 'x' } } })).toBe('x-1');
    expect(b.render({ Target: { metadata: { name: 'x' } } })).toBe('x-2');
    expect(() => b.render({ Target: 5 })).toThrow(
      'template: b:1:4: executing "b" at <.Target.metadata.name>: can\'t evaluate field metadata in type float64',
    );
  });
});
