// KubeMod-compatibility suite, match criteria (items, negate, matchValues, matchRegex, filters, matchFor): each case
// mirrors a behaviour pinned down by KubeMod's own tests or source (kubemod/kubemod core/modrulestoreitem.go isMatch,
// core/modrulestoreitem_test.go "IsMatch"). The rules and objects here are our own; the comment on each case names what
// it mirrors.
import { JsonObject } from '../../util/json';
import { matches, pod, pod2, podNonRoot, service, serviceIPs, withChanges } from './testing';

describe('KubeMod match semantics (core/modrulestoreitem.go isMatch)', () => {
  const cases: Array<{ name: string; match: string; object: JsonObject; want: boolean }> = [
    // IsMatch "should match when single exact value matches" / "fail to match when single exact value fails"
    { name: 'exact value', match: `- select: '$.kind'\n  matchValue: Pod`, object: pod, want: true },
    {
      name: 'exact value, other kind',
      match: `- select: '$.kind'\n  matchValue: Pod`,
      object: service,
      want: false,
    },
    // "should (fail to) match when single exact value (fails to) negative-match"
    {
      name: 'negated exact value',
      match: `- select: '$.kind'\n  matchValue: Pod\n  negate: true`,
      object: pod,
      want: false,
    },
    {
      name: 'negated exact value, other kind',
      match: `- select: '$.kind'\n  matchValue: Pod\n  negate: true`,
      object: service,
      want: true,
    },
    // "should match when both exact values match" / "at least one of exact values" (all items must match)
    {
      name: 'all items must match',
      match: `- select: '$.kind'\n  matchValue: Pod\n- select: '$.metadata.labels.app'\n  matchValue: nginx`,
      object: pod,
      want: true,
    },
    {
      name: 'one item failing fails the rule',
      match: `- select: '$.kind'\n  matchValue: Pod\n- select: '$.metadata.labels.app'\n  matchValue: nginx`,
      object: pod2,
      want: false,
    },
    // "positive query matches, but negative query fails" (exact-pod-and-negative-label)
    {
      name: 'positive and negated items',
      match: `- select: '$.kind'\n  matchValue: Pod\n- select: '$.metadata.labels.app'\n  matchValue: nginx\n  negate: true`,
      object: pod2,
      want: true,
    },
    // "should match array queries" (exact-pod-container-port): numbers compared as their %v text
    {
      name: 'array query with a number',
      match: `- select: '$.spec.containers[*].ports[*].containerPort'\n  matchValue: '9100'`,
      object: pod2,
      want: true,
    },
    {
      name: 'array query that does not match',
      match: `- select: '$.spec.containers[*].ports[*].containerPort'\n  matchValue: '9100'`,
      object: pod,
      want: false,
    },
    // exact-pod-negative-container-port
    {
      name: 'negated array query',
      match: `- select: '$.spec.containers[*].ports[*].containerPort'\n  matchValue: '9100'\n  negate: true`,
      object: pod,
      want: true,
    },
    // "should fail to match queries with missing keys" / "array index out of range" (exact-missing-container)
    {
      name: 'missing key',
      match: `- select: '$.spec.containers[0].name'\n  matchValue: nginx`,
      object: service,
      want: false,
    },
    {
      name: 'index out of range',
      match: `- select: '$.spec.containers[3].name'\n  matchValue: nginx`,
      object: pod2,
      want: false,
    },
    // exact-negative-missing-container: a missing value matches when negated
    {
      name: 'negated missing key',
      match: `- select: '$.spec.containers[3].name'\n  matchValue: nginx\n  negate: true`,
      object: service,
      want: true,
    },
    // "should match query using length" (exact-pod-number-of-containers): a number result as text
    {
      name: 'length as text',
      match: `- select: 'length($.spec.containers)'\n  matchValue: '2'`,
      object: pod2,
      want: true,
    },
    {
      name: 'length as text, 1',
      match: `- select: 'length($.spec.containers)'\n  matchValue: '2'`,
      object: pod,
      want: false,
    },
    // boolean-pod-number-of-containers-greater-than-one: a boolean select decides by itself
    {
      name: 'boolean select true',
      match: `- select: 'length($.spec.containers) > 1'`,
      object: pod2,
      want: true,
    },
    {
      name: 'boolean select false',
      match: `- select: 'length($.spec.containers) > 1'`,
      object: pod,
      want: false,
    },
    // boolean-pod-negative-number-of-containers-greater-than-one
    {
      name: 'negated boolean select',
      match: `- select: 'length($.spec.containers) > 1'\n  negate: true`,
      object: pod,
      want: true,
    },
    // "should ignore value when matching boolean queries"
    {
      name: 'boolean select ignores matchValue',
      match: `- select: 'length($.spec.containers) > 1'\n  matchValue: 'false'`,
      object: pod2,
      want: true,
    },
    // one-of-kind: matchValues
    {
      name: 'matchValues one of',
      match: `- select: '$.kind'\n  matchValues: [Deployment, Pod]`,
      object: pod,
      want: true,
    },
    {
      name: 'matchValues none of',
      match: `- select: '$.kind'\n  matchValues: [Deployment, Pod]`,
      object: service,
      want: false,
    },
    // one-of-kind-negative
    {
      name: 'negated matchValues',
      match: `- select: '$.kind'\n  matchValues: [Deployment, Pod]\n  negate: true`,
      object: service,
      want: true,
    },
    // boolean-pod-negative-run-as-non-root (README reject-root-access-workloads)
    {
      name: 'negated boolean comparison, field absent',
      match: `- select: '$.spec.securityContext.runAsNonRoot == true'\n  negate: true`,
      object: pod,
      want: true,
    },
    {
      name: 'negated boolean comparison, field true',
      match: `- select: '$.spec.securityContext.runAsNonRoot == true'\n  negate: true`,
      object: podNonRoot,
      want: false,
    },
    // select-predicate-pod-port-equal-to-80: filter results, no criteria => any result matches
    {
      name: 'filter with results',
      match: `- select: '$.spec.containers[*].ports[? @.containerPort == 80]'`,
      object: pod,
      want: true,
    },
    {
      name: 'filter without results',
      match: `- select: '$.spec.containers[*].ports[? @.containerPort == 81]'`,
      object: pod,
      want: false,
    },
    // select-predicate-pod-port-equal-to-or-greater-than-80
    {
      name: 'filter with >=',
      match: `- select: '$.spec.containers[*].ports[? @.containerPort >= 9000]'`,
      object: pod2,
      want: true,
    },
    // select-deep-predicate-pod-container-image-regex-port-equal-to-80
    {
      name: 'deep predicate',
      match: `- select: '$.spec.containers[? @.image =~ "exporter"].ports[? @.containerPort == 80]'`,
      object: pod2,
      want: false,
    },
    {
      name: 'deep predicate matching',
      match: `- select: '$.spec.containers[? @.image =~ "nginx"].ports[? @.containerPort == 80]'`,
      object: pod2,
      want: true,
    },
    // select-regex-container-image: matchRegex is an unanchored RE2 match
    {
      name: 'unanchored matchRegex',
      match: `- select: '$.spec.containers[*].image'\n  matchRegex: 'ginx:1\\.14'`,
      object: pod,
      want: true,
    },
    // select-predicate-regex-container-image: filter regex, negated
    {
      name: 'filter regex negated',
      match: `- select: '$.spec.containers[? @.image =~ "^repo1/"]'\n  negate: true`,
      object: pod,
      want: true,
    },
    // patch-28: length of a filter using isUndefined on a nested missing field
    {
      name: 'length of an isUndefined filter',
      match: `- select: 'length($.spec.containers[? isUndefined(@.securityContext.runAsNonRoot)])'\n  matchValue: '1'`,
      object: pod2,
      want: true,
    },
    // README reject-malicious-external-ips (malicious-reject-service-*): matchFor All + negate
    {
      name: 'matchFor All negated, one IP outside the subnet',
      match: `- select: 'length($.spec.externalIPs) > 0'\n- select: '$.spec.externalIPs[*]'\n  matchFor: All\n  matchRegex: '123\\.45\\.67\\.*'\n  negate: true`,
      object: serviceIPs(['123.45.67.10', '23.45.67.89']),
      want: true,
    },
    {
      name: 'matchFor All negated, every IP inside the subnet',
      match: `- select: 'length($.spec.externalIPs) > 0'\n- select: '$.spec.externalIPs[*]'\n  matchFor: All\n  matchRegex: '123\\.45\\.67\\.*'\n  negate: true`,
      object: serviceIPs(['123.45.67.10', '123.45.67.11']),
      want: false,
    },
    {
      name: 'matchFor All negated, no externalIPs',
      match: `- select: 'length($.spec.externalIPs) > 0'\n- select: '$.spec.externalIPs[*]'\n  matchFor: All\n  matchRegex: '123\\.45\\.67\\.*'\n  negate: true`,
      object: serviceIPs(undefined),
      want: false,
    },
    // isMatch: matchFor Any is the default (and "" means Any)
    {
      name: 'matchFor Any (default)',
      match: `- select: '$.spec.externalIPs[*]'\n  matchRegex: '^123\\.'`,
      object: serviceIPs(['10.0.0.1', '123.45.67.10']),
      want: true,
    },
    {
      name: 'matchFor All, one differs',
      match: `- select: '$.spec.externalIPs[*]'\n  matchFor: All\n  matchRegex: '^123\\.'`,
      object: serviceIPs(['10.0.0.1', '123.45.67.10']),
      want: false,
    },
    // jsonpath/path.go drops undefined matches, so elements lacking the field do not count against All
    {
      name: 'matchFor All skips elements without the field',
      match: `- select: '$.spec.containers[*].securityContext.runAsNonRoot'\n  matchFor: All\n  matchValue: 'true'`,
      object: pod2,
      want: true,
    },
    // ... and a wildcard boolean is text, so `false` still "matches" without criteria
    {
      name: 'a false boolean from a wildcard matches without criteria',
      match: `- select: '$.spec.containers[*].securityContext.runAsNonRoot'`,
      object: withChanges(pod2, (p) => {
        const c = (p.spec as JsonObject).containers as JsonObject[];
        c[1].securityContext = { runAsNonRoot: false };
      }),
      want: true,
    },
  ];

  test.each(cases)('$name', ({ match, object, want }) => {
    expect(matches(match, object)).toBe(want);
  });
});
