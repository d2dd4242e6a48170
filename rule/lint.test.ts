import { JsonObject } from '../util/json';
import { compileModRule } from './compile';
import { lintModRule } from './lint';
import { ModRule } from './types';

/** The warnings of a Reject rule on Pods whose second match item is `item`. */
function lint(item: JsonObject): string[] {
  const rule = compileModRule({
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: 'limits', namespace: 'default' },
    spec: { type: 'Reject', match: [{ select: '$.kind', matchValue: 'Pod' }, item] },
  } as unknown as ModRule);
  return lintModRule(rule).map((w) => `${w.field}: ${w.message}`);
}

const suggestion = (warning: string | undefined): string | undefined =>
  /select: '(.*)'$/.exec(warning ?? '')?.[1].replace(/''/g, "'");

describe('matchFor: All with negate over a select that drops missing values', () => {
  const allNegated = { matchFor: 'All', negate: true };

  it('is warned about on the select, naming the list and the member that can be missing', () => {
    const [warning, ...more] = lint({
      select: '$.spec.containers[*].resources.limits',
      matchRegex: 'memory',
      ...allNegated,
    });
    expect(more).toEqual([]);
    expect(warning).toMatch(
      /^spec\.match\[1\]\.select: with matchFor: All and negate, an element of \$\.spec\.containers\[\*\] without \.resources\.limits is never seen: /,
    );
    expect(suggestion(warning)).toBe('$.spec.containers[? !(@.resources.limits =~ `memory`)]');
  });

  it.each<[string, JsonObject, string]>([
    [
      'matchValue',
      { select: '$.spec.containers[*].imagePullPolicy', matchValue: 'Always' },
      '$.spec.containers[? !(@.imagePullPolicy == `Always`)]',
    ],
    [
      'matchValues, and a filter step that keeps its predicate',
      {
        select: "$.spec.containers[?(@.name != 'debug')].securityContext['runAsUser']",
        matchValues: ['1000', '2000'],
      },
      "$.spec.containers[? ((@.name != 'debug')) && !(@.securityContext['runAsUser'] == `1000` || @.securityContext['runAsUser'] == `2000`)]",
    ],
    [
      'no value to compare',
      { select: '$.spec.containers.*.image' },
      '$.spec.containers[? isUndefined(@.image)]',
    ],
    [
      'a regex holding a backquote',
      { select: '$.spec.containers[*].args[0]', matchRegex: 'a`b' },
      '$.spec.containers[? !(@.args[0] =~ "a`b")]',
    ],
  ])('suggests the filter form: %s', (_name, item, expected) => {
    expect(suggestion(lint({ ...item, ...allNegated })[0])).toBe(expected);
  });

  it('has no concrete suggestion after a union or a slice, only the advice', () => {
    const [warning] = lint({ select: '$.spec.containers[0,1].image', matchValue: 'x', ...allNegated });
    expect(warning).toMatch(
      /select the failing elements instead with a filter \(e\.g\. \[\? isUndefined\(@\.image\)\]\)$/,
    );
  });

  it.each<[string, JsonObject]>([
    ['nothing after the wildcard', { select: '$.spec.containers[*]', ...allNegated }],
    ['matchFor Any', { select: '$.spec.containers[*].resources.limits', matchRegex: 'memory', negate: true }],
    ['no negate', { select: '$.spec.containers[*].resources.limits', matchRegex: 'memory', matchFor: 'All' }],
    ['a recursive descent, which searches', { select: '$..limits', matchRegex: 'memory', ...allNegated }],
    ['a path without a wildcard', { select: '$.spec.nodeName', matchValue: 'x', ...allNegated }],
    ['an expression', { select: 'length($.spec.containers[*].resources.limits) > 0', ...allNegated }],
  ])('is not warned about: %s', (_name, item) => {
    expect(lint(item)).toEqual([]);
  });
});
