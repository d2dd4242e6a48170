import { parse } from 'yaml';
import { loadFixture } from '../fixtures/load';
import { JsonObject, JsonValue } from '../util/json';
import { compileModRule } from '../rule/compile';
import { ModRule } from '../rule/types';
import { itemMatches, ruleMatches } from './match';

function item(yaml: string) {
  const rule = compileModRule({
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: 'm', namespace: 'default' },
    spec: { type: 'Reject', match: [parse(yaml) as JsonObject] },
  } as unknown as ModRule);
  return rule.match[0];
}

const deployment = loadFixture('deployment');
const pod = loadFixture('pod');
const service: JsonObject = {
  ...loadFixture('service'),
  spec: { type: 'ClusterIP', externalIPs: ['123.45.67.8', '10.0.0.1'], ports: [{ port: 80 }] },
};

describe('match items (KubeMod isMatch semantics)', () => {
  const cases: Array<[string, string, JsonValue, boolean]> = [
    ['exact value', `{select: '$.kind', matchValue: Deployment}`, deployment, true],
    ['exact value is case sensitive', `{select: '$.kind', matchValue: deployment}`, deployment, false],
    ['no criteria: any result matches', `{select: '$.metadata.labels.app'}`, deployment, true],
    ['no result does not match', `{select: '$.metadata.labels.missing'}`, deployment, false],
    [
      'no result matches when negated',
      `{select: '$.metadata.labels.missing', negate: true}`,
      deployment,
      true,
    ],
    ['boolean select decides', `{select: '$.spec.replicas > 1'}`, deployment, true],
    ['false boolean select', `{select: '$.spec.replicas > 5'}`, deployment, false],
    [
      'boolean select ignores matchValue',
      `{select: '$.spec.replicas > 1', matchValue: 'false'}`,
      deployment,
      true,
    ],
    [
      'negated boolean',
      `{select: '$.spec.template.spec.securityContext.runAsNonRoot == true', negate: true}`,
      deployment,
      true,
    ],
    [
      'numbers compare as Go prints them',
      `{select: '$.spec.template.spec.containers[*].ports[*].containerPort', matchValue: '80'}`,
      deployment,
      true,
    ],
    ['a number is not its quoted form', `{select: '$.spec.replicas', matchValue: '"2"'}`, deployment, false],
    ['a definite number path', `{select: '$.spec.replicas', matchValue: '2'}`, deployment, true],
    // KubeMod compares strings raw: the README's matchValue '"true"' never matches an annotation whose value is true.
    [
      'strings compare raw',
      `{select: '$.metadata.annotations["ref.kubemod.io/inject-node-ref"]', matchValue: 'true'}`,
      pod,
      true,
    ],
    [
      'the README quoted form misses',
      `{select: '$.metadata.annotations["ref.kubemod.io/inject-node-ref"]', matchValue: '"true"'}`,
      pod,
      false,
    ],
    [
      'a definite boolean field decides alone',
      `{select: '$.spec.template.spec.containers[1].securityContext.runAsNonRoot', matchValue: 'no'}`,
      deployment,
      true,
    ],
    [
      'regex Any',
      `{select: '$.spec.template.spec.containers[*].image', matchRegex: 'nginx:1\\.14\\..*'}`,
      deployment,
      true,
    ],
    ['regex is unanchored like Go', `{select: '$.kind', matchRegex: 'ploy'}`, deployment, true],
    [
      'regex All fails when one differs',
      `{select: '$.spec.template.spec.containers[*].image', matchFor: All, matchRegex: '^nginx'}`,
      deployment,
      false,
    ],
    [
      'regex All',
      `{select: '$.spec.template.spec.containers[*].imagePullPolicy', matchFor: All, matchValue: IfNotPresent}`,
      deployment,
      true,
    ],
    ['matchValues Any', `{select: '$.kind', matchValues: [StatefulSet, Deployment]}`, deployment, true],
    ['matchValues miss', `{select: '$.kind', matchValues: [StatefulSet, DaemonSet]}`, deployment, false],
    [
      'negate flips a hit',
      `{select: '$.spec.template.spec.containers[*].name', matchValue: nginx, negate: true}`,
      deployment,
      false,
    ],
    [
      'negate flips a miss',
      `{select: '$.spec.template.spec.containers[*].name', matchValue: jaeger-agent, negate: true}`,
      deployment,
      true,
    ],
    [
      'matchValue wins over matchRegex',
      `{select: '$.kind', matchValue: Pod, matchRegex: '.*'}`,
      deployment,
      false,
    ],
    [
      'empty matchValues falls through to regex',
      `{select: '$.kind', matchValues: [], matchRegex: '^Dep'}`,
      deployment,
      true,
    ],
    [
      'definite path to a list matches element-wise',
      `{select: '$.spec.externalIPs', matchValue: '10.0.0.1'}`,
      service,
      true,
    ],
    [
      'All over a wildcard with negate (README external IPs)',
      `{select: '$.spec.externalIPs[*]', matchFor: All, matchRegex: '123\\.45\\.67\\.*', negate: true}`,
      service,
      true,
    ],
    ['length() boolean', `{select: 'length($.spec.externalIPs) > 0'}`, service, true],
    [
      'maps print as Go maps',
      `{select: '$.spec.template.spec.containers[1].resources.limits', matchValue: 'map[memory:128Mi]'}`,
      deployment,
      true,
    ],
    [
      'null results do not match',
      `{select: '$.spec.template.metadata.creationTimestamp'}`,
      deployment,
      false,
    ],
    [
      'filters select elements',
      `{select: '$.spec.template.spec.containers[? @.image =~ "their-repo"].name', matchValue: log-shipper}`,
      deployment,
      true,
    ],
  ];
  test.each(cases)('%s', (_name, yaml, obj, expected) => {
    expect(itemMatches(item(yaml), obj)).toBe(expected);
  });

  test('a rule matches only when every item matches', () => {
    const rule = compileModRule(
      parse(`
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: r, namespace: default}
spec:
  type: Reject
  match:
    - select: '$.kind'
      matchValue: Deployment
    - select: '$.metadata.labels.app'
      matchValue: nginx
`) as ModRule,
    );
    expect(ruleMatches(rule, deployment)).toBe(true);
    expect(ruleMatches(rule, { ...deployment, kind: 'StatefulSet' })).toBe(false);
  });
});

describe('long matchValues lists', () => {
  const values = Array.from({ length: 100_000 }, (_, i) => `w${i}`);
  const long = () =>
    compileModRule({
      apiVersion: 'api.kubemod.io/v1beta1',
      kind: 'ModRule',
      metadata: { name: 'm', namespace: 'default' },
      spec: { type: 'Reject', match: [{ select: '$.data.*', matchValues: [...values, 'v7'] }] },
    } as unknown as ModRule).match[0];

  test('are kept as a Set when compiled, so no request builds one', () => {
    const item = long();
    expect(item.valueSet?.size).toBe(100_001);
    // Short lists are compared in place.
    expect(
      compileModRule({
        apiVersion: 'api.kubemod.io/v1beta1',
        kind: 'ModRule',
        metadata: { name: 'm', namespace: 'default' },
        spec: { type: 'Reject', match: [{ select: '$.kind', matchValues: ['Pod', 'Service'] }] },
      } as unknown as ModRule).match[0].valueSet,
    ).toBeUndefined();
  });

  test('match as the list does', () => {
    const item = long();
    expect(itemMatches(item, { data: { a: 'x', b: 'v7' } })).toBe(true);
    expect(itemMatches(item, { data: { a: 'w99999' } })).toBe(true);
    expect(itemMatches(item, { data: { a: 'w100000' } })).toBe(false);
  });
});
