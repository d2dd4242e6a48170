import { JsonObject } from '../util/json';
import { compileModRule } from './compile';
import { lintModRule } from './lint';
import { ModRule } from './types';

/** The warnings of a Patch rule on Pods adding an env value `value`, with more match items if given. */
function lint(value: string, match: JsonObject[] = [], extra: JsonObject = {}): string[] {
  const rule = compileModRule({
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: 'sidecar', namespace: 'default' },
    spec: {
      type: 'Patch',
      match: [{ select: '$.kind', matchValue: 'Pod' }, ...match],
      patch: [{ op: 'add', path: '/spec/containers/0/env/-', value: `name: APP\nvalue: '${value}'` }],
      ...extra,
    },
  } as unknown as ModRule);
  return lintModRule(rule).map((w) => `${w.field}: ${w.message}`);
}

describe('index of a map the object may not have', () => {
  it('is warned about on the value, with the form that does not fail', () => {
    expect(lint('{{ index .Target.metadata.labels "app" | default "unknown" }}')).toEqual([
      'spec.patch[0].value: index .Target.metadata.labels "app" fails at run time ("index of untyped nil") on an ' +
        'object without metadata.labels, and the rule then patches nothing: write index (.Target.metadata.labels | ' +
        'default dict) "app", or match only objects that have it (select: \'$.metadata.labels\')',
    ]);
  });

  it.each([
    [
      'nested in a pipeline argument',
      '{{ printf "%s" (index .Target.metadata.annotations "team") }}',
      'metadata.annotations',
    ],
    [
      'in a range body',
      '{{ range .Target.spec.containers }}{{ index $.Target.spec.nodeSelector "zone" }}{{ end }}',
      'spec.nodeSelector',
    ],
  ])('is found %s', (_, value, missing) => {
    expect(lint(value)).toEqual([expect.stringContaining(`on an object without ${missing},`)]);
  });

  it('in a rejectMessage too', () => {
    const rule = compileModRule({
      apiVersion: 'api.kubemod.io/v1beta1',
      kind: 'ModRule',
      metadata: { name: 'no-root', namespace: 'default' },
      spec: {
        type: 'Reject',
        match: [{ select: '$.kind', matchValue: 'Pod' }],
        rejectMessage: 'owner {{ index .Target.metadata.labels "owner" }} must not run as root',
      },
    } as unknown as ModRule);
    expect(lintModRule(rule).map((w) => w.field)).toEqual(['spec.rejectMessage']);
  });

  it.each<[string, string, JsonObject[]]>([
    ['a map that is always there', '{{ index .Target.metadata "name" }}', []],
    ['a list index', '{{ index .Target.spec.containers 0 }}', []],
    [
      'the map guarded by if',
      '{{ if .Target.metadata.labels }}{{ index .Target.metadata.labels "app" }}{{ end }}',
      [],
    ],
    [
      'the map guarded by with',
      '{{ with .Target.metadata.labels }}{{ index $.Target.metadata.labels "app" }}{{ end }}',
      [],
    ],
    ['the safe form', '{{ index (.Target.metadata.labels | default dict) "app" }}', []],
    [
      'a match item requiring it',
      '{{ index .Target.metadata.labels "app" }}',
      [{ select: '$.metadata.labels.app' }],
    ],
  ])('is not warned about for %s', (_, value, match) => {
    expect(lint(value, match)).toEqual([]);
  });

  it('is warned about when the only match item on the map is negated', () => {
    expect(
      lint('{{ index .Target.metadata.labels "app" }}', [{ select: '$.metadata.labels', negate: true }]),
    ).toHaveLength(1);
  });
});
