// KubeMod-compatibility suite, how selected values compare (lists, null, booleans, Go %v text, precedence, errors):
// each case mirrors a behaviour pinned down by KubeMod's own tests or source (kubemod/kubemod core/modrulestoreitem.go
// isMatch and isStringMatch, jsonpath/path.go, core/dragnetwebhook.go). The rules and objects here are our own; the
// comment on each case names what it mirrors.
import { JsonObject } from '../../util/json';
import { deployment, matches, pod, pod2, service, serviceIPs, withChanges } from './testing';

describe('KubeMod match semantics (core/modrulestoreitem.go isMatch)', () => {
  const cases: Array<{ name: string; match: string; object: JsonObject; want: boolean }> = [
    // isMatch case []interface{}: a definite path to a list is matched element by element
    {
      name: 'definite path to a list',
      match: `- select: '$.spec.externalIPs'\n  matchValue: 10.0.0.1`,
      object: serviceIPs(['123.45.67.10', '10.0.0.1']),
      want: true,
    },
    // len(expressionValues) == 0: an empty list does not match, unless negated
    {
      name: 'definite path to an empty list',
      match: `- select: '$.spec.externalIPs'`,
      object: serviceIPs([]),
      want: false,
    },
    {
      name: 'negated definite path to an empty list',
      match: `- select: '$.spec.externalIPs'\n  negate: true`,
      object: serviceIPs([]),
      want: true,
    },
    // case nil: a null value does not match
    {
      name: 'definite path to null',
      match: `- select: '$.spec.template.metadata.creationTimestamp'`,
      object: deployment,
      want: false,
    },
    // case bool: a definite path to a boolean field decides, matchValue ignored
    {
      name: 'definite path to a boolean field',
      match: `- select: '$.spec.containers[1].securityContext.runAsNonRoot'\n  matchValue: 'false'`,
      object: pod2,
      want: true,
    },
    // fmt.Sprintf("%v"): booleans inside a wildcard result are text
    {
      name: 'booleans from a wildcard are text',
      match: `- select: '$.spec.containers[*].securityContext.runAsNonRoot'\n  matchValue: 'true'`,
      object: pod2,
      want: true,
    },
    // fmt.Sprintf("%v") of nil inside a list is <nil>
    {
      name: 'null from a wildcard is <nil>',
      match: `- select: '$.spec.template.metadata.*'\n  matchValue: '<nil>'`,
      object: deployment,
      want: true,
    },
    // fmt.Sprintf("%v") of a map: map[k:v] with sorted keys
    {
      name: 'maps print as map[...]',
      match: `- select: '$.spec.selector.matchLabels'\n  matchValue: 'map[app:nginx]'`,
      object: deployment,
      want: true,
    },
    // fmt.Sprintf("%v") of a float64 from encoding/json: 1e+06, 0.5
    {
      name: 'large numbers print as Go %v',
      match: `- select: '$.spec.replicas'\n  matchValue: '1e+06'`,
      object: withChanges(deployment, (d) => ((d.spec as JsonObject).replicas = 1000000)),
      want: true,
    },
    {
      name: 'small integers print plainly',
      match: `- select: '$.spec.replicas'\n  matchValue: '2'`,
      object: deployment,
      want: true,
    },
    // case string: strings are compared raw, so '"nginx"' is not nginx
    {
      name: 'strings are compared raw',
      match: `- select: '$.metadata.labels.app'\n  matchValue: '"nginx"'`,
      object: pod,
      want: false,
    },
    // A string "true" is a string, not a boolean: matchValue applies
    {
      name: 'a "true" annotation is compared as text',
      match: `- select: '$.metadata.annotations["ref.kubemod.io/inject-node-ref"]'\n  matchValue: 'false'`,
      object: pod,
      want: false,
    },
    // isStringMatch precedence: matchValue wins over matchRegex
    {
      name: 'matchValue wins over matchRegex',
      match: `- select: '$.kind'\n  matchValue: Service\n  matchRegex: 'Pod'`,
      object: pod,
      want: false,
    },
    // isStringMatch: an empty matchValues list is ignored (then matchRegex decides)
    {
      name: 'empty matchValues is ignored',
      match: `- select: '$.kind'\n  matchValues: []\n  matchRegex: '^Po'`,
      object: pod,
      want: true,
    },
    // isMatch: `if err != nil { return matchItem.Negate }` — a select failing at run time
    {
      name: 'select error does not match',
      match: `- select: '$.metadata.name && true'`,
      object: pod,
      want: false,
    },
    {
      name: 'negated select error matches',
      match: `- select: '$.metadata.name && true'\n  negate: true`,
      object: pod,
      want: true,
    },
    // kubemod_jsonpath.go: `in` with a JSON array literal is a boolean select
    { name: 'in a list of kinds', match: `- select: '$.kind in ["Pod", "Job"]'`, object: pod, want: true },
    {
      name: 'not in a list of kinds',
      match: `- select: '$.kind in ["Pod", "Job"]'`,
      object: service,
      want: false,
    },
    // bracket notation for keys with dots and slashes (patch-22: $.metadata.labels["color"])
    {
      name: 'bracket notation',
      match: `- select: '$.metadata.labels["pod-template-hash"]'\n  matchValue: 7c79c4bf97`,
      object: pod,
      want: true,
    },
  ];

  test.each(cases)('$name', ({ match, object, want }) => {
    expect(matches(match, object)).toBe(want);
  });

  // dragnetwebhook.go: managedFields are removed before matching.
  test('managedFields are invisible to selects', () => {
    expect(matches(`- select: '$.metadata.managedFields'`, deployment)).toBe(false);
    expect(matches(`- select: '$.metadata.managedFields'\n  negate: true`, deployment)).toBe(true);
  });
});
