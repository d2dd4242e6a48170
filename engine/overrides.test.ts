import { loadFixture } from '../fixtures/load';
import { admitChecked, ruleYaml, storeFromYaml } from './testing';

const patchRule = (name: string, ops: string, extra = ''): string =>
  ruleYaml(
    name,
    `type: Patch
${extra.trim()}
match:
  - select: '$.kind'
    matchValue: Deployment
patch:
${ops.replace(/^ {2}/gm, '')}`,
  );
const add = (path: string, value: string) => `    - op: add\n      path: ${path}\n      value: '${value}'`;
const remove = (path: string) => `    - op: remove\n      path: ${path}`;

describe("a later rule undoing an earlier rule's write in the same request", () => {
  test('two rules of one tier setting one label: the earlier is overridden by the later', () => {
    const store = storeFromYaml(
      patchRule('a', add('/metadata/labels/team', 'web')) +
        patchRule('b', add('/metadata/labels/team', 'db')),
    );
    const out = admitChecked(store, loadFixture('deployment'));
    expect(out.overridden).toEqual([
      {
        rule: { namespace: 'default', name: 'a' },
        by: { namespace: 'default', name: 'b' },
        path: '/metadata/labels/team',
      },
    ]);
  });

  test('a later tier removing what an earlier one added; a write above the path counts too', () => {
    const store = storeFromYaml(
      patchRule('a', add('/metadata/annotations/x', 'one') + '\n' + add('/metadata/labels/team', 'web')) +
        patchRule('b', remove('/metadata/annotations/x'), '  executionTier: 1') +
        patchRule('c', add('/metadata/labels', 'other: label'), '  executionTier: 2'),
    );
    const out = admitChecked(store, loadFixture('deployment'));
    expect(out.overridden.map((o) => [o.rule.name, o.by.name, o.path])).toEqual([
      ['a', 'b', '/metadata/annotations/x'],
      ['a', 'c', '/metadata/labels/team'],
    ]);
  });

  test('the same value, disjoint paths, list appends and a single rule: nothing', () => {
    const store = storeFromYaml(
      patchRule(
        'a',
        add('/metadata/labels/team', 'web') + '\n' + add('/spec/template/spec/containers/-', 'name: x'),
      ) +
        patchRule(
          'b',
          add('/metadata/labels/team', 'web') + '\n' + add('/spec/template/spec/containers/-', 'name: y'),
        ) +
        patchRule('c', add('/metadata/labels/other', 'z')),
    );
    expect(admitChecked(store, loadFixture('deployment')).overridden).toEqual([]);
    const single = storeFromYaml(
      patchRule('a', add('/metadata/labels/t', 'one') + '\n' + add('/metadata/labels/t', 'two')),
    );
    expect(admitChecked(single, loadFixture('deployment')).overridden).toEqual([]);
  });

  test("KubeMod's -1 append (a list insert) by two rules: nothing", () => {
    const store = storeFromYaml(
      patchRule('a', add('/spec/template/spec/containers/-1', 'name: x')) +
        patchRule('b', add('/spec/template/spec/containers/-1', 'name: y')),
    );
    expect(admitChecked(store, loadFixture('deployment')).overridden).toEqual([]);
  });

  test('a DryRun rule overrides nothing: its patch is not applied', () => {
    const store = storeFromYaml(
      patchRule('a', add('/metadata/labels/team', 'web')) +
        patchRule('b', add('/metadata/labels/team', 'db'), '  enforcementAction: DryRun') +
        patchRule('c', add('/metadata/labels/other', 'z')),
    );
    expect(admitChecked(store, loadFixture('deployment')).overridden).toEqual([]);
  });
});
