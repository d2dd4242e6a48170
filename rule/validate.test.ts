import { parse } from 'yaml';
import { cloneJson, JsonObject } from '../util/json';
import { compileModRule, InvalidModRuleError, placeholderCapacity, preprocessValueTemplate } from './compile';
import { withDefaults } from './defaults';
import { ModRule } from './types';
import { formatProblems } from './problems';
import { validateModRule } from './validate';

const valid = (): JsonObject =>
  parse(`
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata:
  name: my-modrule
  namespace: default
spec:
  type: Patch
  match:
    - select: '$.kind'
      matchValue: Deployment
    - select: '$.spec.template.spec.containers[*].image'
      matchRegex: 'nginx:1\\.14\\..*'
  patch:
    - op: add
      path: /metadata/annotations/my-annotation
      value: whatever
    - op: add
      select: '$.spec.template.spec.containers[*].ports[? @.containerPort == 80]'
      path: '/spec/template/spec/containers/#0/ports/#1/containerPort'
      value: '8080'
`) as JsonObject;

/** Applies a change to a copy of the valid rule. */
function variant(change: (r: JsonObject & { spec: JsonObject }) => void): JsonObject {
  const r = cloneJson(valid()) as JsonObject & { spec: JsonObject };
  change(r);
  return r;
}

const match = (r: { spec: JsonObject }, i: number): JsonObject => (r.spec.match as JsonObject[])[i];
const patchOp = (r: { spec: JsonObject }, i: number): JsonObject => (r.spec.patch as JsonObject[])[i];

describe('validateModRule', () => {
  test('a valid rule has no problems', () => {
    expect(validateModRule(valid())).toEqual([]);
  });

  const cases: Array<[string, unknown, string, string | RegExp]> = [
    ['not an object', 'x', '', 'must be an object'],
    ['apiVersion', variant((r) => (r.apiVersion = 'v1')), 'apiVersion', 'must be api.kubemod.io/v1beta1'],
    ['kind', variant((r) => (r.kind = 'Deployment')), 'kind', 'must be ModRule'],
    ['name', variant((r) => ((r.metadata as JsonObject).name = '')), 'metadata.name', 'required'],
    ['spec', variant((r) => delete (r as JsonObject).spec), 'spec', 'required'],
    ['type', variant((r) => (r.spec.type = 'Mutate')), 'spec.type', 'must be Patch or Reject'],
    [
      'operations',
      variant((r) => (r.spec.admissionOperations = ['CREATE', 'CONNECT'])),
      'spec.admissionOperations[1]',
      'must be one of CREATE, UPDATE, DELETE',
    ],
    [
      'tier not integer',
      variant((r) => (r.spec.executionTier = 1.5)),
      'spec.executionTier',
      'must be an integer',
    ],
    [
      'tier too high',
      variant((r) => (r.spec.executionTier = 32767)),
      'spec.executionTier',
      'between -32767 and 32766',
    ],
    [
      'tier too low',
      variant((r) => (r.spec.executionTier = -32768)),
      'spec.executionTier',
      'between -32767 and 32766',
    ],
    [
      'enforcementAction unknown',
      variant((r) => (r.spec.enforcementAction = 'Audit')),
      'spec.enforcementAction',
      'must be one of Enforce, Warn, DryRun, got "Audit"',
    ],
    [
      'enforcementAction lower case',
      variant((r) => (r.spec.enforcementAction = 'dryrun')),
      'spec.enforcementAction',
      'must be one of Enforce, Warn, DryRun, got "dryrun"',
    ],
    ['match missing', variant((r) => delete r.spec.match), 'spec.match', 'required'],
    ['match empty', variant((r) => (r.spec.match = [])), 'spec.match', 'at least one'],
    ['select missing', variant((r) => delete match(r, 1).select), 'spec.match[1].select', 'required'],
    [
      'select syntax',
      variant((r) => (match(r, 0).select = '$.kind ==')),
      'spec.match[0].select',
      /^column \d+: expected/,
    ],
    [
      'matchRegex',
      variant((r) => (match(r, 1).matchRegex = '(abc')),
      'spec.match[1].matchRegex',
      /^invalid regex: /,
    ],
    [
      'matchFor',
      variant((r) => (match(r, 0).matchFor = 'Some')),
      'spec.match[0].matchFor',
      'must be Any or All',
    ],
    [
      'matchValues type',
      variant((r) => (match(r, 0).matchValues = ['a', 3])),
      'spec.match[0].matchValues[1]',
      'must be a string',
    ],
    [
      // `matchValue: yes` in a file: YAML 1.1 reads it as the boolean true.
      'matchValue yes read as a boolean',
      variant(
        (r) => (match(r, 0).matchValue = parse('matchValue: yes', { version: '1.1' }).matchValue as boolean),
      ),
      'spec.match[0].matchValue',
      'must be a string, got true: YAML 1.1 (as kubectl and KubeMod read it) takes an unquoted y, yes, on and true for a boolean; quote it: matchValue: "yes" compares with the text yes, matchValue: "true" with a boolean the select yields',
    ],
    [
      'matchValues item off read as a boolean',
      variant((r) => (match(r, 0).matchValues = ['on', false])),
      'spec.match[0].matchValues[1]',
      'must be a string, got false: YAML 1.1 (as kubectl and KubeMod read it) takes an unquoted n, no, off and false for a boolean; quote it: "no" compares with the text no, "false" with a boolean the select yields',
    ],
    [
      'matchValue a number',
      variant((r) => (match(r, 0).matchValue = 8080)),
      'spec.match[0].matchValue',
      'must be a string, got 8080: an unquoted number is read as a number; quote it: matchValue: "8080" (a number the select yields is compared as text too)',
    ],
    [
      'matchRegex a number',
      variant((r) => (match(r, 0).matchRegex = 1.14)),
      'spec.match[0].matchRegex',
      'must be a string, got 1.14: an unquoted number is read as a number; quote it: matchRegex: "1.14"',
    ],
    ['negate type', variant((r) => (match(r, 0).negate = 'yes')), 'spec.match[0].negate', 'true or false'],
    [
      'unknown match field',
      variant((r) => (match(r, 0).matchvalue = 'x')),
      'spec.match[0].matchvalue',
      'did you mean "matchValue"',
    ],
    [
      'unknown spec field (README typo)',
      variant((r) => (r.spec.matches = [])),
      'spec.matches',
      'did you mean "match"',
    ],
    [
      'unknown spec field nearer another known one than the first close one',
      variant((r) => (r.spec.patchs = [])),
      'spec.patchs',
      'did you mean "patch"',
    ],
    [
      'Patch without patch',
      variant((r) => delete r.spec.patch),
      'spec.patch',
      'required for ModRules of type Patch',
    ],
    [
      'Reject with patch',
      variant((r) => (r.spec.type = 'Reject')),
      'spec.patch',
      'only allowed in ModRules of type Patch',
    ],
    [
      'rejectMessage on Patch',
      variant((r) => (r.spec.rejectMessage = 'no')),
      'spec.rejectMessage',
      'only allowed in ModRules of type Reject',
    ],
    [
      'op',
      variant((r) => (patchOp(r, 0).op = 'move')),
      'spec.patch[0].op',
      'must be one of add, replace, remove',
    ],
    ['path missing', variant((r) => delete patchOp(r, 0).path), 'spec.patch[0].path', 'required'],
    [
      'path relative',
      variant((r) => (patchOp(r, 0).path = 'metadata/labels')),
      'spec.patch[0].path',
      'must start with "/"',
    ],
    ['path bad escape', variant((r) => (patchOp(r, 0).path = '/metadata/a~2b')), 'spec.patch[0].path', /~/],
    [
      'placeholder beyond captures',
      variant((r) => (patchOp(r, 1).path = '/spec/template/spec/containers/#0/ports/#2')),
      'spec.patch[1].path',
      'placeholder #2',
    ],
    [
      'value missing for add',
      variant((r) => delete patchOp(r, 0).value),
      'spec.patch[0].value',
      'required for add',
    ],
    [
      'value not a string',
      variant((r) => (patchOp(r, 0).value = 8080)),
      'spec.patch[0].value',
      'must be a string',
    ],
    [
      // `value: y` in a file: YAML 1.1 reads it as the boolean true.
      'value y read as a boolean',
      variant((r) => (patchOp(r, 0).value = parse('value: y', { version: '1.1' }).value as boolean)),
      'spec.patch[0].value',
      'must be a string holding YAML, got true: YAML 1.1 (as kubectl and KubeMod read it) takes an unquoted y, yes, on and true for a boolean; quote the value: value: "true" patches in the boolean true, value: \'"yes"\' the string "yes"',
    ],
    [
      'value off read as a boolean',
      variant((r) => (patchOp(r, 0).value = false)),
      'spec.patch[0].value',
      'unquoted n, no, off and false for a boolean; quote the value: value: "false"',
    ],
    [
      'value a number',
      variant((r) => (patchOp(r, 0).value = 8080)),
      'spec.patch[0].value',
      'got 8080: an unquoted number is read as a number; quote the value: value: "8080" patches in the number 8080, value: \'"8080"\' the string "8080"',
    ],
    [
      'value a mapping',
      variant((r) => (patchOp(r, 0).value = { runAsNonRoot: true })),
      'spec.patch[0].value',
      'write the YAML as text, e.g. a block: "value: |-"',
    ],
    [
      'value template syntax',
      variant((r) => (patchOp(r, 0).value = '{{ .Target.metadata.name ')),
      'spec.patch[0].value',
      'invalid template',
    ],
    ['value YAML', variant((r) => (patchOp(r, 0).value = 'a: [1')), 'spec.patch[0].value', 'invalid YAML'],
    [
      'patch select syntax',
      variant((r) => (patchOp(r, 1).select = '$.spec[')),
      'spec.patch[1].select',
      /^column \d+/,
    ],
    [
      'rejectMessage template',
      variant((r) => {
        r.spec.type = 'Reject';
        delete r.spec.patch;
        r.spec.rejectMessage = '{{ if }}';
      }),
      'spec.rejectMessage',
      'invalid template',
    ],
    [
      'targetNamespaceRegex',
      variant((r) => (r.spec.targetNamespaceRegex = '[')),
      'spec.targetNamespaceRegex',
      /^invalid regex/,
    ],
  ];
  test.each(cases)('%s', (_name, rule, field, message) => {
    const problems = validateModRule(rule);
    const found = problems.find((p) => p.field === field);
    expect(found).toBeDefined();
    if (typeof message === 'string') expect(found?.message).toContain(message);
    else expect(found?.message).toMatch(message);
  });

  test('every problem is reported at once', () => {
    const r = variant((x) => {
      x.spec.type = 'Nope';
      match(x, 0).select = '';
      match(x, 1).matchRegex = '(';
      patchOp(x, 0).op = 'copy';
    });
    expect(validateModRule(r).map((p) => p.field)).toEqual([
      'spec.type',
      'spec.match[0].select',
      'spec.match[1].matchRegex',
      'spec.patch[0].op',
    ]);
  });

  test('#N without a select is literal text, as in KubeMod', () => {
    const r = variant((x) => (patchOp(x, 0).path = '/metadata/annotations/issue#1'));
    expect(validateModRule(r)).toEqual([]);
    expect(compileModRule(r as unknown as ModRule).patch[0].tokens).toEqual([
      'metadata',
      'annotations',
      'issue#1',
    ]);
  });

  test('formatProblems joins field and message', () => {
    expect(
      formatProblems([
        { field: 'spec.match[1].matchRegex', message: 'invalid regex: missing )' },
        { field: 'spec.type', message: 'bad' },
      ]),
    ).toBe('spec.match[1].matchRegex: invalid regex: missing ); spec.type: bad');
  });
});

describe('targetNamespaceSelector (metav1.LabelSelector, checked as the API server does)', () => {
  const withSelector = (sel: unknown): JsonObject =>
    variant((r) => {
      (r.metadata as JsonObject).namespace = 'kubemod-system';
      r.spec.targetNamespaceSelector = sel as JsonObject;
    });
  const at = 'spec.targetNamespaceSelector';

  test('valid selectors compile and match like labels.Selector', () => {
    const rule = compileModRule(
      withSelector({
        matchLabels: { 'example.com/team': 'payments', tier: '' },
        matchExpressions: [
          { key: 'env', operator: 'In', values: ['prod', 'staging'] },
          { key: 'legacy', operator: 'NotIn', values: ['true'] },
          { key: 'owner', operator: 'Exists' },
          { key: 'exempt', operator: 'DoesNotExist', values: [] },
        ],
      }) as unknown as ModRule,
    );
    const sel = rule.targetNamespaceSelector!;
    const base = { 'example.com/team': 'payments', tier: '', env: 'prod', owner: 'x' };
    expect(sel.matches(base)).toBe(true);
    expect(sel.matches({ ...base, legacy: 'false' })).toBe(true); // NotIn: other value
    expect(sel.matches({ ...base, legacy: 'true' })).toBe(false);
    expect(sel.matches({ ...base, env: 'dev' })).toBe(false);
    expect(sel.matches({ ...base, exempt: '' })).toBe(false);
    const { owner: _owner, ...noOwner } = base;
    expect(sel.matches(noOwner)).toBe(false);
    expect(sel.matches({ ...base, tier: 'x' })).toBe(false);
    expect(compileModRule(withSelector({}) as unknown as ModRule).targetNamespaceSelector!.matches({})).toBe(
      true,
    );
  });

  const cases: Array<[string, unknown, string, string | RegExp]> = [
    ['not an object', 'env=prod', at, 'must be a label selector'],
    ['unknown field', { matchLabel: { a: 'b' } }, `${at}.matchLabel`, 'unknown field'],
    [
      'In without values',
      { matchExpressions: [{ key: 'a', operator: 'In' }] },
      `${at}.matchExpressions[0].values`,
      "must be specified when `operator` is 'In' or 'NotIn'",
    ],
    [
      'NotIn with []',
      { matchExpressions: [{ key: 'a', operator: 'NotIn', values: [] }] },
      `${at}.matchExpressions[0].values`,
      'Required value',
    ],
    [
      'Exists with values',
      { matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] },
      `${at}.matchExpressions[0].values`,
      "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
    ],
    [
      'bad operator',
      { matchExpressions: [{ key: 'a', operator: 'Equals', values: ['x'] }] },
      `${at}.matchExpressions[0].operator`,
      'not a valid selector operator',
    ],
    [
      'bad key',
      { matchExpressions: [{ key: '-a', operator: 'Exists' }] },
      `${at}.matchExpressions[0].key`,
      'name part must consist of alphanumeric characters',
    ],
    [
      'bad key prefix',
      { matchLabels: { 'Example.com/a': 'b' } },
      `${at}.matchLabels`,
      'prefix part must be a lowercase DNS subdomain',
    ],
    [
      'key too long',
      { matchLabels: { ['a'.repeat(64)]: 'b' } },
      `${at}.matchLabels`,
      'no more than 63 characters',
    ],
    [
      'bad label value',
      { matchLabels: { a: 'b c' } },
      `${at}.matchLabels`,
      'a valid label value must be an empty string or',
    ],
    [
      'bad expression value',
      { matchExpressions: [{ key: 'a', operator: 'In', values: ['ok', 'not ok'] }] },
      `${at}.matchExpressions[0].values[1]`,
      'Invalid value: "not ok"',
    ],
    ['value not a string', { matchLabels: { a: 1 } }, `${at}.matchLabels`, 'must be a string'],
    [
      'missing key',
      { matchExpressions: [{ operator: 'Exists' }] },
      `${at}.matchExpressions[0].key`,
      'Required value',
    ],
  ];
  test.each(cases)('%s', (_name, sel, field, message) => {
    const problems = validateModRule(withSelector(sel));
    expect(problems.map((p) => p.field)).toEqual([field]);
    expect(problems[0].message).toMatch(message);
  });
});

describe('compileModRule', () => {
  test('compiles selects, regexes, constant values, placeholders and defaults once', () => {
    const rule = compileModRule(valid() as unknown as ModRule);
    expect(rule).toMatchObject({
      namespace: 'default',
      name: 'my-modrule',
      key: 'default/my-modrule',
      type: 'Patch',
      tier: 0,
    });
    expect([...rule.operations].sort()).toEqual(['CREATE', 'UPDATE']);
    expect(rule.match[1].matchRegex?.test('nginx:1.14.2')).toBe(true);
    expect(rule.patch[0].value).toEqual({ kind: 'constant', value: 'whatever' });
    expect(rule.patch[1].value).toEqual({ kind: 'constant', value: 8080 });
    expect(rule.patch[1].tokens).toEqual([
      'spec',
      'template',
      'spec',
      'containers',
      [0],
      'ports',
      [1],
      'containerPort',
    ]);
    expect(rule.patch[1].hasPlaceholders).toBe(true);
    expect(placeholderCapacity(rule.patch[1].select!)).toBe(2);
  });

  test('templates are compiled, with .#N rewritten to the select key parts', () => {
    const r = variant((x) => (patchOp(x, 1).value = '{{ .#0 }}-{{ .Target.metadata.name }}'));
    const rule = compileModRule(r as unknown as ModRule);
    const v = rule.patch[1].value;
    expect(v.kind).toBe('template');
    if (v.kind === 'template') {
      expect(
        v.template.render({
          Target: { metadata: { name: 'n' } },
          Namespace: 'd',
          SelectedItem: null,
          SelectKeyParts: [3, 1],
        }),
      ).toBe('3-n');
    }
  });

  test('.#N is rewritten inside actions only: text outside them stays as written (unlike KubeMod)', () => {
    expect(preprocessValueTemplate('file.#0-{{ .#0 }}{{print .#12}}')).toBe(
      'file.#0-{{ (index .SelectKeyParts 0) }}{{print (index .SelectKeyParts 12)}}',
    );
    expect(preprocessValueTemplate('v.#0')).toBe('v.#0');
    expect(preprocessValueTemplate('{{ .#1')).toBe('{{ (index .SelectKeyParts 1)');
  });

  test('operations and tier come from the spec', () => {
    const r = variant((x) => {
      x.spec.admissionOperations = ['DELETE'];
      x.spec.executionTier = -4;
    });
    const rule = compileModRule(r as unknown as ModRule);
    expect([...rule.operations]).toEqual(['DELETE']);
    expect(rule.tier).toBe(-4);
  });

  test('enforcementAction is Enforce when absent, else as written; rules differing only in it share no body', () => {
    expect(compileModRule(valid() as unknown as ModRule).enforcement).toBe('Enforce');
    for (const action of ['Enforce', 'Warn', 'DryRun'] as const) {
      const rule = compileModRule(variant((x) => (x.spec.enforcementAction = action)) as unknown as ModRule);
      expect(rule.enforcement).toBe(action);
    }
    // null as absent, as for the other optional fields
    const nulled = compileModRule(variant((x) => (x.spec.enforcementAction = null)) as unknown as ModRule);
    expect(nulled.enforcement).toBe('Enforce');
  });

  test('an invalid rule throws InvalidModRuleError with every problem', () => {
    const r = variant((x) => (x.spec.type = 'Nope'));
    expect(() => compileModRule(r as unknown as ModRule)).toThrow(InvalidModRuleError);
    try {
      compileModRule(r as unknown as ModRule);
    } catch (err) {
      expect((err as InvalidModRuleError).problems[0].field).toBe('spec.type');
    }
  });
});

describe('withDefaults', () => {
  test('fills KubeMod defaults without touching what is set', () => {
    const r = variant((x) => (match(x, 1).matchFor = 'All'));
    const out = withDefaults(r) as { spec: JsonObject };
    expect(out.spec.executionTier).toBe(0);
    expect(match(out, 0)).toMatchObject({ matchFor: 'Any', negate: false });
    expect(match(out, 1)).toMatchObject({ matchFor: 'All', negate: false });
    expect(out.spec).not.toHaveProperty('admissionOperations');
    expect(r.spec).not.toHaveProperty('executionTier'); // a copy
    expect(withDefaults({ kind: 'ModRule' })).toEqual({ kind: 'ModRule' });
  });
});
