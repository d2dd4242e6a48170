// KubeMod-compatibility suite: each case mirrors a behaviour pinned down by KubeMod's own tests or source
// (kubemod/kubemod core/modrulestoreitem_test.go "IsMatch", core/modrulestore_test.go "CalculatePatch" and
// "DetermineRejections" with core/testdata/**, util/template_test.go, api/v1beta1/modrule_webhook.go,
// core/dragnetwebhook.go). The rules and objects here are our own; the comment on each case names what it mirrors.
import { parseAllDocuments } from 'yaml';
import { loadFixture } from '../fixtures/load';
import { cloneJson, JsonObject, JsonValue } from '../util/json';
import { LAST_APPLIED_ANNOTATION, NODE_REF_ANNOTATION } from '../rule/types';
import { validateModRule } from '../rule/validate';
import { AdmissionOutcome } from './admit';
import { admitChecked, AdmitOptions, storeFromYaml } from './testing';

// ---------------------------------------------------------------------------------------------------------------
// Helpers

/** A ModRule document from a name, an optional namespace and a YAML spec body. */
function modrule(name: string, spec: string, namespace = 'default'): string {
  const body = spec
    .trim()
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');
  return `apiVersion: api.kubemod.io/v1beta1\nkind: ModRule\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\nspec:\n${body}\n`;
}

function parseRule(text: string): JsonObject {
  return parseAllDocuments(text)[0].toJS() as JsonObject;
}

interface RunOptions extends AdmitOptions {
  cluster?: readonly JsonObject[];
}

function run(rules: readonly string[], object: JsonObject | null, o: RunOptions = {}): AdmissionOutcome {
  return admitChecked(storeFromYaml(rules, { cluster: o.cluster }), object, o);
}

function get(obj: JsonValue | null | undefined, path: string): JsonValue | undefined {
  let cur: JsonValue | undefined = obj ?? undefined;
  for (const part of path.split('.').filter((p) => p !== '')) {
    if (cur === null || typeof cur !== 'object' || cur === undefined) return undefined;
    cur = Array.isArray(cur) ? cur[Number(part)] : cur[part];
  }
  return cur;
}

function labels(o: JsonObject | null): JsonObject {
  return (get(o, 'metadata.labels') ?? {}) as JsonObject;
}

function lastApplied(o: JsonObject | null): JsonObject {
  const annotations = get(o, 'metadata.annotations') as JsonObject;
  return JSON.parse(annotations[LAST_APPLIED_ANNOTATION] as string) as JsonObject;
}

function withChanges(obj: JsonObject, change: (o: JsonObject) => void): JsonObject {
  const copy = cloneJson(obj);
  change(copy);
  return copy;
}

const deployment = loadFixture('deployment');
const pod = loadFixture('pod');
const service = loadFixture('service');
const namespaceObj = loadFixture('namespace');
const node = loadFixture('node');

/** A pod with two containers; only the first listens on 80 and only the second runs as non-root. */
const pod2 = withChanges(pod, (p) => {
  const spec = p.spec as JsonObject;
  const containers = spec.containers as JsonObject[];
  containers.push({
    name: 'metrics',
    image: 'repo1/exporter:0.9',
    ports: [{ containerPort: 9100, protocol: 'TCP' }],
    securityContext: { runAsNonRoot: true },
  });
  (p.metadata as JsonObject).labels = { app: 'exporter' };
});

const podNonRoot = withChanges(pod, (p) => {
  ((p.spec as JsonObject).securityContext as JsonObject).runAsNonRoot = true;
});

const serviceIPs = (ips: string[] | undefined): JsonObject =>
  withChanges(service, (s) => {
    if (ips === undefined) delete (s.spec as JsonObject).externalIPs;
    else (s.spec as JsonObject).externalIPs = ips;
  });

// ---------------------------------------------------------------------------------------------------------------
// Match semantics

/** Does a Reject rule with this match section reject the object (admitted in `default`)? */
function matches(match: string, object: JsonObject): boolean {
  const out = run([modrule('m', `type: Reject\nmatch:\n${match}`)], object);
  return out.rejections.length === 1;
}

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

// ---------------------------------------------------------------------------------------------------------------
// Patch semantics

const isDeployment = `match:\n  - select: '$.kind'\n    matchValue: Deployment`;
const isPod = `match:\n  - select: '$.kind'\n    matchValue: Pod`;

function patchRule(name: string, match: string, patch: string, extra = ''): string {
  return modrule(name, `type: Patch\n${extra}${match}\npatch:\n${patch}`);
}

describe('KubeMod patch semantics (core/modrulestoreitem.go calculatePatch, evanphx options)', () => {
  // patch-11: add creates missing parents (an object, or an array for an index), -1 appends.
  test('add creates missing parents and -1 appends (patch-11)', () => {
    const out = run(
      [
        patchRule(
          'p',
          isPod,
          `  - op: add\n    path: /spec/metadata/annotations/color\n    value: whatever\n  - op: add\n    path: /spec/volumes/-1\n    value: |\n      name: scratch\n      emptyDir: {}\n  - op: add\n    path: /spec/extraThings/-1\n    value: |\n      name: hello`,
        ),
      ],
      pod,
    );
    expect(out.failures).toEqual([]);
    expect(get(out.object, 'spec.metadata.annotations.color')).toBe('whatever');
    const volumes = get(out.object, 'spec.volumes') as JsonObject[];
    expect(volumes).toHaveLength(2);
    expect(volumes[1]).toEqual({ name: 'scratch', emptyDir: {} });
    expect(get(out.object, 'spec.extraThings')).toEqual([{ name: 'hello' }]);
  });

  // evanphx SupportNegativeIndices: on add, -2 inserts before the last element; on replace/remove -1 is the last.
  test('negative indices on add, replace and remove', () => {
    const out = run(
      [
        patchRule(
          'p',
          isDeployment,
          `  - op: add\n    path: /spec/template/spec/containers/-2\n    value: '{name: sidecar, image: "busybox:1.36"}'\n  - op: replace\n    path: /spec/template/spec/containers/-1/image\n    value: their-repo/log-shipper:2.2\n  - op: remove\n    path: /spec/template/spec/containers/0/ports/-1`,
        ),
      ],
      deployment,
    );
    expect(out.failures).toEqual([]);
    const containers = get(out.object, 'spec.template.spec.containers') as JsonObject[];
    expect(containers.map((c) => c.name)).toEqual(['nginx', 'sidecar', 'log-shipper']);
    expect(containers[2].image).toBe('their-repo/log-shipper:2.2');
    expect(containers[0].ports).toEqual([]);
  });

  // AllowMissingPathOnRemove; replace of a missing path fails the rule (logged, skipped), other rules still apply.
  test('remove of a missing path is ignored; a failing replace drops only its rule', () => {
    const out = run(
      [
        patchRule('a-remove', isDeployment, `  - op: remove\n    path: /metadata/annotations/not-there`),
        patchRule(
          'b-replace',
          isDeployment,
          `  - op: add\n    path: /metadata/labels/half\n    value: done\n  - op: replace\n    path: /spec/not-there\n    value: x`,
        ),
        patchRule(
          'c-add',
          isDeployment,
          `  - op: add\n    path: /metadata/labels/ok\n    value: 'yes-really'`,
        ),
      ],
      deployment,
    );
    expect(out.failures.map((f) => f.rule.name)).toEqual(['b-replace']);
    expect(labels(out.object)).toEqual({ app: 'nginx', ok: 'yes-really' });
  });

  // patch-10: replace through a select with #0/#1 placeholders; the same change goes into last-applied.
  test('select with #0/#1 placeholders, last-applied patched too (patch-10)', () => {
    const out = run(
      [
        patchRule(
          'p',
          isDeployment,
          `  - op: replace\n    select: '$.spec.template.spec.containers[*].ports[? @.containerPort == 80]'\n    path: /spec/template/spec/containers/#0/ports/#1/containerPort\n    value: '8080'`,
        ),
      ],
      deployment,
    );
    expect(get(out.object, 'spec.template.spec.containers.0.ports.0.containerPort')).toBe(8080);
    expect(get(out.object, 'spec.template.spec.containers.1.ports.0.containerPort')).toBe(9100);
    expect(get(lastApplied(out.object), 'spec.template.spec.containers.0.ports.0.containerPort')).toBe(8080);
  });

  // patch-12: .SelectedItem in a template with Sprig's regexReplaceAll.
  test('.SelectedItem with regexReplaceAll (patch-12)', () => {
    const out = run(
      [
        patchRule(
          'p',
          isPod,
          `  - op: replace\n    select: '$.spec.containers[? @.image =~ "repo1/.+"].image'\n    path: /spec/containers/#0/image\n    value: '{{ regexReplaceAll "(.+)/(.*)" .SelectedItem "my-repo/\${2}" }}'`,
        ),
      ],
      pod2,
    );
    const containers = get(out.object, 'spec.containers') as JsonObject[];
    expect(containers.map((c) => c.image)).toEqual(['nginx:1.14.2', 'my-repo/exporter:0.9']);
  });

  // patch-21 (isDefined && isEmpty) and README containers-securitycontext: only matching elements are patched.
  test('filter select adds under the selected elements only (patch-21)', () => {
    const object = withChanges(deployment, (d) => {
      const containers = get(d, 'spec.template.spec.containers') as JsonObject[];
      containers[1].securityContext = {};
    });
    const out = run(
      [
        patchRule(
          'p',
          isDeployment,
          `  - op: add\n    select: '$.spec.template.spec.containers[? isDefined(@.securityContext) && isEmpty(@.securityContext)]'\n    path: /spec/template/spec/containers/#0/securityContext\n    value: |-\n      runAsNonRoot: true\n      capabilities:\n        drop: [ALL]`,
        ),
      ],
      object,
    );
    const containers = get(out.object, 'spec.template.spec.containers') as JsonObject[];
    expect(containers[0].securityContext).toBeUndefined();
    expect(containers[1].securityContext).toEqual({ runAsNonRoot: true, capabilities: { drop: ['ALL'] } });
  });

  // keyPartsFromSelectKey: a select over a map captures member names; .SelectKeyParts / .#0 expose them.
  test('select over a map: #0 is the key, .#0 and .SelectKeyParts in templates', () => {
    const object = withChanges(pod, (p) => {
      (p.metadata as JsonObject).labels = { app: 'nginx', tier: 'web' };
    });
    const out = run(
      [
        patchRule(
          'p',
          isPod,
          `  - op: add\n    select: '$.metadata.labels[*]'\n    path: /metadata/annotations/copy-#0\n    value: '{{ .#0 }}={{ .SelectedItem }} ({{ index .SelectKeyParts 0 }})'`,
        ),
      ],
      object,
    );
    const annotations = get(out.object, 'metadata.annotations') as JsonObject;
    expect(annotations['copy-app']).toBe('app=nginx (app)');
    expect(annotations['copy-tier']).toBe('tier=web (tier)');
  });

  // keyPartsFromSelectKey (typeDetection): captured indices, and map keys strconv.Atoi accepts, are Go ints.
  test('.SelectKeyParts holds Go ints: eq, printf %d, typeOf', () => {
    const object = withChanges(pod2, (p) => {
      (p.metadata as JsonObject).annotations = { '8080': 'http', web: 'site' };
    });
    const out = run(
      [
        patchRule(
          'p',
          isPod,
          [
            `  - op: add`,
            `    select: '$.spec.containers[*]'`,
            `    path: /spec/containers/#0/env`,
            `    value: '[{name: FIRST, value: "{{ if eq .#0 0 }}yes{{ else }}no{{ end }}"}, {name: IDX, value: "{{ printf "%03d" .#0 }}"}]'`,
            `  - op: add`,
            `    select: '$.metadata.annotations[*]'`,
            `    path: /metadata/labels/type-#0`,
            `    value: '{{ typeOf .#0 }}'`,
          ].join('\n'),
        ),
      ],
      object,
    );
    expect(out.failures).toEqual([]);
    const containers = get(out.object, 'spec.containers') as JsonObject[];
    expect(containers.map((c) => c.env)).toEqual([
      [
        { name: 'FIRST', value: 'yes' },
        { name: 'IDX', value: '000' },
      ],
      [
        { name: 'FIRST', value: 'no' },
        { name: 'IDX', value: '001' },
      ],
    ]);
    expect(labels(out.object)).toMatchObject({ 'type-8080': 'int', 'type-web': 'string' });
  });

  // KubeMod pastes a captured key into the path text, so a key with "/" splits into two tokens there; we insert
  // the key as one token (docs/engine.md, our own choices).
  test('a captured key with a slash stays one path token (our own choice)', () => {
    const object = withChanges(pod, (p) => {
      (p.metadata as JsonObject).labels = { 'app.kubernetes.io/name': 'web' };
    });
    const out = run(
      [
        patchRule(
          'p',
          isPod,
          `  - op: add\n    select: '$.metadata.labels[*]'\n    path: /metadata/annotations/from-#0\n    value: '{{ .SelectedItem }}'`,
        ),
      ],
      object,
    );
    expect(get(out.object, 'metadata.annotations') as JsonObject).toMatchObject({
      'from-app.kubernetes.io/name': 'web',
    });
  });

  // PatchTemplateContext: without a select, .SelectedItem is nil and .SelectKeyParts is empty.
  test('.SelectedItem and .SelectKeyParts without a select', () => {
    const out = run(
      [
        patchRule(
          'p',
          isPod,
          `  - op: add\n    path: /metadata/labels/ctx\n    value: '"{{ .SelectedItem }}|{{ len .SelectKeyParts }}|{{ kindIs "invalid" .SelectedItem }}"'`,
        ),
      ],
      pod,
    );
    expect(labels(out.object).ctx).toBe('<no value>|0|true');
  });

  // README: "If select is not specified, path is rendered as-is" — #0 stays literal text.
  test('#0 without a select is literal', () => {
    const out = run(
      [patchRule('p', isPod, `  - op: add\n    path: /metadata/labels/x#0\n    value: z`)],
      pod,
    );
    expect(labels(out.object)['x#0']).toBe('z');
  });

  // {#: select} with no result generates no operation; the rule still counts as applied.
  test('select without results patches nothing', () => {
    const out = run(
      [
        patchRule(
          'p',
          isPod,
          `  - op: add\n    select: '$.spec.containers[? @.name == "nope"]'\n    path: /spec/containers/#0/image\n    value: x\n  - op: add\n    select: '$.metadata.labels.missing'\n    path: /metadata/labels/seen\n    value: y`,
        ),
      ],
      pod,
    );
    expect(out.failures).toEqual([]);
    expect(out.patch).toEqual([]);
  });

  // A definite select yields one operation with empty SelectKeyParts and the value as .SelectedItem.
  test('definite select: one operation, .SelectedItem is the value', () => {
    const out = run(
      [
        patchRule(
          'p',
          isPod,
          `  - op: add\n    select: '$.metadata.generateName'\n    path: /metadata/labels/origin\n    value: '{{ trimSuffix "-" .SelectedItem }}-{{ len .SelectKeyParts }}'`,
        ),
      ],
      pod,
    );
    expect(labels(out.object).origin).toBe('nginx-7c79c4bf97-0');
  });

  // remove through a select removes every selected element (KubeMod's map order is random; we go last first).
  test('remove through a select removes every selected array element', () => {
    const out = run(
      [
        patchRule(
          'p',
          isPod,
          `  - op: remove\n    select: '$.spec.tolerations[? @.key =~ "^node.kubernetes.io/"]'\n    path: /spec/tolerations/#0`,
        ),
      ],
      pod,
    );
    expect(get(out.object, 'spec.tolerations')).toEqual([]);
  });

  // modRuleValueToJSONValue = sigs.k8s.io/yaml YAMLToJSON (YAML 1.1 via go-yaml v2).
  const values: Array<[string, JsonValue]> = [
    [`'8080'`, 8080],
    [`'"8080"'`, '8080'],
    [`'false'`, false],
    [`'"false"'`, 'false'],
    [`hello`, 'hello'],
    [`'null'`, null],
    [`'~'`, null],
    [`'yes'`, true],
    [`'off'`, false],
    // go-yaml v2 also resolves y/n as booleans.
    [`y`, true],
    [`'N'`, false],
    [`'"yes"'`, 'yes'],
    [`'0777'`, 511],
    [`'0x1F'`, 31],
    [`'1.5'`, 1.5],
    [`'[a, 2]'`, ['a', 2]],
    [`'{a: 1}'`, { a: 1 }],
    [`'2026-11-23'`, '2026-11-23'],
    [`'{{ "8080" }}'`, 8080],
    [`'"{{ .Namespace }}"'`, 'default'],
    [`'{{ .Target.spec.replicas }}'`, 2],
    [`'{{ if false }}x{{ end }}'`, null],
  ];
  test.each(values)('value %s is YAML %j', (value, want) => {
    const out = run(
      [patchRule('p', isDeployment, `  - op: add\n    path: /metadata/annotations/v\n    value: ${value}`)],
      deployment,
    );
    expect(out.failures).toEqual([]);
    expect(get(out.object, 'metadata.annotations.v')).toEqual(want);
  });

  // A rendered value that is not valid YAML fails the rule (calculatePatch returns the error; the rule is skipped).
  test('a rendered value that is not YAML fails only that rule', () => {
    const out = run(
      [
        patchRule(
          'bad',
          isDeployment,
          `  - op: add\n    path: /metadata/labels/bad\n    value: '{{ "a: b: c" }}'`,
        ),
        patchRule(
          'good',
          isDeployment,
          `  - op: add\n    path: /metadata/labels/good\n    value: 'yes-it-is'`,
        ),
      ],
      deployment,
    );
    expect(out.failures.map((f) => f.rule.name)).toEqual(['bad']);
    expect(labels(out.object)).toEqual({ app: 'nginx', good: 'yes-it-is' });
  });

  // A template error at run time fails the rule (Execute returns an error).
  test('a template failing at run time fails only that rule', () => {
    const out = run(
      [
        patchRule(
          'bad',
          isDeployment,
          `  - op: add\n    path: /metadata/labels/bad\n    value: '{{ fail "no" }}'`,
        ),
      ],
      deployment,
    );
    expect(out.failures.map((f) => f.rule.name)).toEqual(['bad']);
    expect(out.patch).toEqual([]);
  });

  // Template context: .Target holds the object with syntheticRefs, .Namespace the request namespace.
  test('.Target sees syntheticRefs.namespace and .Namespace is the namespace', () => {
    const out = run(
      [
        patchRule(
          'p',
          isDeployment,
          `  - op: add\n    path: /metadata/labels/flavor\n    value: '{{ .Target.syntheticRefs.namespace.metadata.labels.flavor }}-{{ .Namespace }}'`,
        ),
      ],
      deployment,
      { cluster: [namespaceObj] },
    );
    expect(labels(out.object).flavor).toBe('vanilla-default');
    expect(out.object?.syntheticRefs).toBeUndefined();
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Tiers (core/modrulestore_test.go "simple tiered execution", "two ModRules in second tier", "three tiers")

describe('KubeMod execution tiers', () => {
  const colored = (color: string): JsonObject =>
    withChanges(deployment, (d) => {
      (d.metadata as JsonObject).labels = { app: 'nginx', color };
      const la = lastApplied(d);
      (la.metadata as JsonObject).labels = { app: 'nginx', color };
      (d.metadata as JsonObject).annotations = { [LAST_APPLIED_ANNOTATION]: JSON.stringify(la) };
    });
  const when = (color: string): string =>
    `match:\n  - select: '$.kind'\n    matchValue: Deployment\n  - select: '$.metadata.labels.color'\n    matchValue: ${color}`;
  const setLabel = (k: string, v: string): string =>
    `  - op: add\n    path: /metadata/labels/${k}\n    value: ${v}`;

  const t29 = patchRule('t29', when('green'), setLabel('color', 'yellow'), 'executionTier: -1\n');
  const t30 = patchRule('t30', when('yellow'), setLabel('taste', 'sour'));
  const t31 = patchRule(
    't31',
    when('yellow'),
    `${setLabel('size', 'large')}\n${setLabel('color', 'purple')}`,
    'executionTier: 1\n',
  );
  const t31b = patchRule('t31b', when('yellow'), setLabel('shape', 'round'), 'executionTier: 1\n');
  const t32 = patchRule('t32', when('purple'), setLabel('done', 'true-ish'), 'executionTier: 2\n');

  test('a lower tier feeds the next one (patch-29 + patch-30)', () => {
    const out = run([t30, t29], colored('green'));
    expect(labels(out.object)).toEqual({ app: 'nginx', color: 'yellow', taste: 'sour' });
  });

  test('rules of one tier all match against the tier input (patch-29..31)', () => {
    const out = run([t29, t30, t31, t31b], colored('green'));
    // t31 turned the color purple, but t31b (same tier) was matched against yellow and still applies.
    expect(labels(out.object)).toEqual({
      app: 'nginx',
      color: 'purple',
      taste: 'sour',
      size: 'large',
      shape: 'round',
    });
    // The last-applied annotation follows every rule (expectation patch-29-30-31-deployment-1.txt).
    expect(labels(lastApplied(out.object))).toEqual(labels(out.object));
  });

  test('a third tier sees the second tier result (patch-29..32)', () => {
    const out = run([t29, t30, t31, t32], colored('green'));
    expect(labels(out.object).done).toBe('true-ish');
  });

  // patch-32: a tier-2 rule removes what tier 1 added, from the object and from last-applied.
  test('a higher tier removes what a lower tier added (patch-29..32)', () => {
    const t32r = patchRule(
      't32r',
      `match:\n  - select: '$.metadata.labels.size'\n    matchValue: large`,
      `  - op: remove\n    path: /metadata/labels/size`,
      'executionTier: 2\n',
    );
    const out = run([t29, t30, t31, t32r], colored('green'));
    expect(labels(out.object)).toEqual({ app: 'nginx', color: 'purple', taste: 'sour' });
    expect(labels(lastApplied(out.object))).toEqual(labels(out.object));
  });

  test('nothing matches without the starting color', () => {
    const out = run([t29, t30, t31, t32], colored('red'));
    expect(out.patch).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// last-applied-configuration (CalculatePatch applies each rule's patch to the annotation too)

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

function sortKeys(v: JsonValue): JsonValue {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(sortKeys);
  const out: JsonObject = {};
  for (const k of Object.keys(v).sort()) out[k] = sortKeys(v[k]);
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Scope: own namespace, cluster namespace, targetNamespaceRegex (getMatchingModRuleStoreItems)

describe('KubeMod rule scope', () => {
  const addLabel = (name: string, ns: string, extra = ''): string =>
    modrule(
      name,
      `type: Patch\n${extra}${isDeployment}\npatch:\n  - op: add\n    path: /metadata/labels/by-${name}\n    value: x`,
      ns,
    );
  const nsPatch = (name: string, extra = ''): string =>
    modrule(
      name,
      `type: Patch\n${extra}match:\n  - select: '$.kind'\n    matchValue: Namespace\npatch:\n  - op: add\n    path: /metadata/labels/by-${name}\n    value: x`,
      'kubemod-system',
    );
  const inTeam = (ns: string): JsonObject =>
    withChanges(deployment, (d) => {
      (d.metadata as JsonObject).namespace = ns;
    });
  const applied = (out: AdmissionOutcome): string[] => out.patched.map((r) => r.name).sort();

  const cases: Array<{
    name: string;
    rules: string[];
    object: JsonObject;
    ns: string | null;
    want: string[];
  }> = [
    // A rule applies in its own namespace only.
    {
      name: 'own namespace',
      rules: [addLabel('own', 'default'), addLabel('other', 'team-a')],
      object: deployment,
      ns: 'default',
      want: ['own'],
    },
    // patch-13: cluster-namespace rule with a matching targetNamespaceRegex.
    {
      name: 'targetNamespaceRegex matches',
      rules: [addLabel('wide', 'kubemod-system', 'targetNamespaceRegex: "team-.*"\n')],
      object: inTeam('team-a'),
      ns: 'team-a',
      want: ['wide'],
    },
    // regexp.Match is unanchored.
    {
      name: 'targetNamespaceRegex is unanchored',
      rules: [addLabel('wide', 'kubemod-system', 'targetNamespaceRegex: "team"\n')],
      object: inTeam('my-team-a'),
      ns: 'my-team-a',
      want: ['wide'],
    },
    {
      name: 'targetNamespaceRegex does not match',
      rules: [addLabel('wide', 'kubemod-system', 'targetNamespaceRegex: "^team-"\n')],
      object: inTeam('my-team-a'),
      ns: 'my-team-a',
      want: [],
    },
    // patch-14: missing targetNamespaceRegex => not applied to namespaced objects elsewhere.
    {
      name: 'no targetNamespaceRegex',
      rules: [addLabel('wide', 'kubemod-system')],
      object: deployment,
      ns: 'default',
      want: [],
    },
    // patch-15: empty targetNamespaceRegex counts as absent.
    {
      name: 'empty targetNamespaceRegex',
      rules: [addLabel('wide', 'kubemod-system', 'targetNamespaceRegex: ""\n')],
      object: deployment,
      ns: 'default',
      want: [],
    },
    // Only cluster-namespace rules are consulted for targetNamespaceRegex; elsewhere it has no effect.
    {
      name: 'targetNamespaceRegex outside the cluster namespace',
      rules: [addLabel('local', 'default', 'targetNamespaceRegex: ".*"\n')],
      object: inTeam('team-a'),
      ns: 'team-a',
      want: [],
    },
    // Own-namespace rules also apply in the cluster namespace itself (modRuleListMap[namespace]).
    {
      name: 'rules of the cluster namespace for objects in it',
      rules: [addLabel('sys', 'kubemod-system')],
      object: inTeam('kubemod-system'),
      ns: 'kubemod-system',
      want: ['sys'],
    },
    // Cluster-namespace rules without a regex apply to cluster-scoped objects.
    {
      name: 'cluster-scoped object, no regex',
      rules: [nsPatch('ns-rule')],
      object: namespaceObj,
      ns: null,
      want: ['ns-rule'],
    },
    // ... and those whose regex matches "" (".*").
    {
      name: 'cluster-scoped object, regex .*',
      rules: [nsPatch('ns-rule', 'targetNamespaceRegex: ".*"\n')],
      object: namespaceObj,
      ns: null,
      want: ['ns-rule'],
    },
    {
      name: 'cluster-scoped object, regex not matching ""',
      rules: [nsPatch('ns-rule', 'targetNamespaceRegex: "^team-"\n')],
      object: namespaceObj,
      ns: null,
      want: [],
    },
    // dragnetwebhook.go: a Namespace's UPDATE names itself as namespace; it is still cluster-scoped.
    {
      name: 'Namespace object with its own name as namespace',
      rules: [nsPatch('ns-rule'), addLabel('own', 'default')],
      object: namespaceObj,
      ns: 'default',
      want: ['ns-rule'],
    },
    // Rules in other namespaces never apply to cluster-scoped objects.
    {
      name: 'cluster-scoped object ignores namespaced rules',
      rules: [
        modrule(
          'n',
          `type: Patch\nmatch:\n  - select: '$.kind'\npatch:\n  - op: add\n    path: /metadata/labels/n\n    value: x`,
          'default',
        ),
      ],
      object: namespaceObj,
      ns: null,
      want: [],
    },
  ];

  test.each(cases)('$name', ({ rules, object, ns, want }) => {
    expect(applied(run(rules, object, { namespace: ns, operation: 'UPDATE', oldObject: object }))).toEqual(
      want,
    );
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Reject (DetermineRejections) and DELETE

describe('KubeMod rejections', () => {
  const rejectExternal = (message: string | null): string =>
    modrule(
      'no-external-ips',
      `type: Reject\n${message === null ? '' : `rejectMessage: '${message}'\n`}match:\n  - select: '$.kind'\n    matchValue: Service\n  - select: '$.spec.externalIPs[*]'\n    matchFor: All\n    matchRegex: '^123\\.45\\.67\\.'\n    negate: true`,
    );

  // malicious-reject-service-*.txt: the message is the rendered rejectMessage.
  test('rendered rejectMessage', () => {
    const out = run([rejectExternal('IPs {{ .Target.spec.externalIPs }} in {{ .Namespace }}')], service);
    expect(out.allowed).toBe(false);
    expect(out.patch).toEqual([]);
    expect(out.rejections).toEqual([
      {
        rule: { namespace: 'default', name: 'no-external-ips' },
        message: 'IPs [123.45.67.10 23.45.67.89] in default',
      },
    ]);
  });

  // No rejectMessage: only the rule name (DetermineRejections appends GetNamespacedName()).
  test('no rejectMessage', () => {
    expect(run([rejectExternal(null)], service).rejections[0].message).toBe('');
  });

  // bad-reject-message-2 (malicious-reject-service-4.txt): a message failing at run time still rejects.
  test('a rejectMessage failing at run time still rejects', () => {
    const out = run([rejectExternal('{{ .Target.spec.externalIPs.nope.deeper }}')], service);
    expect(out.allowed).toBe(false);
    expect(out.rejections[0].message).toBe('');
  });

  // bad-reject-message-1: "template: rejectMessage:1: unclosed action" — refused when stored.
  test('a rejectMessage that does not parse is a validation problem', () => {
    const problems = validateModRule(parseRule(rejectExternal('{{ .Target')));
    expect(problems.map((p) => p.field)).toEqual(['spec.rejectMessage']);
    // Go: "template: rejectMessage:1: unclosed action"; we add the column (docs/templates.md).
    expect(problems[0].message).toMatch(/template: rejectMessage:1:\d+: unclosed action/);
  });

  // dragnetwebhook.go: CalculatePatch first, then DetermineRejections(patchedJSON).
  test('Reject rules see the patched object', () => {
    const out = run(
      [
        patchRule(
          'label',
          isDeployment,
          `  - op: add\n    path: /metadata/labels/exposed\n    value: 'yes-sir'`,
        ),
        modrule('no-exposed', `type: Reject\nmatch:\n  - select: '$.metadata.labels.exposed'`),
      ],
      deployment,
    );
    expect(out.allowed).toBe(false);
    expect(out.rejections.map((r) => r.rule.name)).toEqual(['no-exposed']);
  });

  test('every matching Reject rule is reported', () => {
    const out = run(
      [
        rejectExternal('one'),
        modrule('also', `type: Reject\nmatch:\n  - select: '$.kind'\n    matchValue: Service`),
      ],
      service,
    );
    expect(out.rejections.map((r) => r.rule.name).sort()).toEqual(['also', 'no-external-ips']);
  });

  // syntheticRefs.node (podbindingwebhook.go + patch-33): Pods annotated with a node see its manifest.
  test('syntheticRefs.node for Pods bound to a known node', () => {
    const bound = withChanges(pod, (p) => {
      ((p.metadata as JsonObject).annotations as JsonObject)[NODE_REF_ANNOTATION] = 'worker-1';
    });
    const rule = modrule(
      'region',
      `type: Patch\nadmissionOperations: [UPDATE]\n${isPod}\n  - select: '$.syntheticRefs.node.metadata.labels'\npatch:\n  - op: add\n    path: /metadata/labels/topology.kubernetes.io~1region\n    value: '"{{ index .Target.syntheticRefs.node.metadata.labels "topology.kubernetes.io/region" }}"'`,
    );
    const out = run([rule], bound, { operation: 'UPDATE', oldObject: pod, cluster: [node] });
    expect(labels(out.object)['topology.kubernetes.io/region']).toBe('eu-west-1');
    // Without the node manifest, the match item on syntheticRefs.node has no result.
    expect(run([rule], bound, { operation: 'UPDATE', oldObject: pod }).patch).toEqual([]);
    // admissionOperations [UPDATE]: CREATE does not run it.
    expect(run([rule], bound, { cluster: [node] }).patch).toEqual([]);
  });

  // dragnetwebhook.go: on DELETE the old object is matched.
  test('DELETE matches the old object; default operations exclude DELETE', () => {
    const guard = (ops: string): string =>
      modrule(
        'guard',
        `type: Reject\n${ops}rejectMessage: 'keep {{ .Target.metadata.name }}'\n${isDeployment}`,
      );
    const del = run([guard('admissionOperations: [DELETE]\n')], null, {
      operation: 'DELETE',
      oldObject: deployment,
    });
    expect(del.allowed).toBe(false);
    expect(del.rejections[0].message).toBe('keep nginx');
    expect(run([guard('')], null, { operation: 'DELETE', oldObject: deployment }).allowed).toBe(true);
  });
  // dragnetwebhook.go: CalculatePatch runs on DELETE too and DetermineRejections sees its result; the API server
  // gets no patch for a DELETE.
  test('on DELETE, DELETE Patch rules feed Reject rules; no patch is returned', () => {
    const rules = [
      patchRule(
        'mark',
        isDeployment,
        `  - op: add\n    path: /metadata/labels/protected\n    value: '"true"'`,
        'admissionOperations: [CREATE, UPDATE, DELETE]\n',
      ),
      modrule(
        'keep-protected',
        `type: Reject\nadmissionOperations: [DELETE]\nmatch:\n  - select: '$.metadata.labels.protected'\n    matchValue: 'true'`,
      ),
    ];
    const out = run(rules, null, { operation: 'DELETE', oldObject: deployment });
    expect(out.allowed).toBe(false);
    expect(out.rejections.map((r) => r.rule.name)).toEqual(['keep-protected']);
    expect(out.patch).toEqual([]);
    expect(out.object).toBeNull();
    // Without the Patch rule the stored object has no such label and the delete goes through.
    expect(run(rules.slice(1), null, { operation: 'DELETE', oldObject: deployment }).allowed).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Validation (api/v1beta1/modrule_webhook.go validateModRule + CRD schema)

describe('KubeMod validation', () => {
  const cases: Array<{ name: string; spec: string; fields: string[] }> = [
    { name: 'unrecognized type', spec: `type: Mutate\n${isPod}`, fields: ['spec.type'] },
    // "field 'patch' cannot be empty for ModRules of type Patch"
    { name: 'Patch without patch', spec: `type: Patch\n${isPod}`, fields: ['spec.patch'] },
    // "field 'patch' should be present only for ModRules of type Patch"
    {
      name: 'Reject with patch',
      spec: `type: Reject\n${isPod}\npatch:\n  - op: remove\n    path: /a`,
      fields: ['spec.patch'],
    },
    // "field 'rejectMessage' should be present only for ModRules of type Reject"
    {
      name: 'Patch with rejectMessage',
      spec: `type: Patch\nrejectMessage: no\n${isPod}\npatch:\n  - op: remove\n    path: /a`,
      fields: ['spec.rejectMessage'],
    },
    // "spec.match[].select in body must be non-empty string"
    { name: 'empty select', spec: `type: Reject\nmatch:\n  - select: ''`, fields: ['spec.match[0].select'] },
    {
      name: 'select that does not parse',
      spec: `type: Reject\nmatch:\n  - select: '$.spec[?'`,
      fields: ['spec.match[0].select'],
    },
    {
      name: 'bad matchRegex',
      spec: `type: Reject\nmatch:\n  - select: $.kind\n    matchRegex: '(x'`,
      fields: ['spec.match[0].matchRegex'],
    },
    // "unrecognized matchFor value"
    {
      name: 'bad matchFor',
      spec: `type: Reject\nmatch:\n  - select: $.kind\n    matchFor: Some`,
      fields: ['spec.match[0].matchFor'],
    },
    {
      name: 'bad value template',
      spec: `type: Patch\n${isPod}\npatch:\n  - op: add\n    path: /a\n    value: '{{ .Target'`,
      fields: ['spec.patch[0].value'],
    },
    {
      name: 'bad patch select',
      spec: `type: Patch\n${isPod}\npatch:\n  - op: add\n    select: '$.a[?'\n    path: /a\n    value: x`,
      fields: ['spec.patch[0].select'],
    },
    // util.NewSafeTemplate: unknown functions do not parse.
    {
      name: 'unknown template function',
      spec: `type: Patch\n${isPod}\npatch:\n  - op: add\n    path: /a\n    value: '{{ nosuchfunc 1 }}'`,
      fields: ['spec.patch[0].value'],
    },
    // CRD: match minItems 1, executionTier int16 range.
    { name: 'empty match', spec: `type: Reject\nmatch: []`, fields: ['spec.match'] },
    {
      name: 'tier out of range',
      spec: `type: Reject\nexecutionTier: 40000\n${isPod}`,
      fields: ['spec.executionTier'],
    },
    { name: 'valid Reject', spec: `type: Reject\n${isPod}`, fields: [] },
    {
      name: 'valid Patch with every field',
      spec: `type: Patch\nexecutionTier: -5\nadmissionOperations: [CREATE, DELETE]\ntargetNamespaceRegex: '.*'\nmatch:\n  - select: $.kind\n    matchValues: [Pod]\n    matchFor: All\n    negate: false\npatch:\n  - op: add\n    select: '$.spec.containers[*]'\n    path: /spec/containers/#0/x\n    value: '{{ .#0 }}'`,
      fields: [],
    },
  ];

  test.each(cases)('$name', ({ spec, fields }) => {
    expect(validateModRule(parseRule(modrule('v', spec))).map((p) => p.field)).toEqual(fields);
  });

  // util/template_test.go: ".#0.#2" becomes "(index .SelectKeyParts 0)(index .SelectKeyParts 2)" everywhere in
  // the value in KubeMod, also outside actions; modrule rewrites inside actions only (docs/engine.md).
  test('.#N shorthand in value templates', () => {
    const object = withChanges(pod, (p) => {
      (p.metadata as JsonObject).labels = { a: '1' };
    });
    const out = run(
      [
        patchRule(
          'p',
          isPod,
          `  - op: add\n    select: '$.metadata.labels[*]'\n    path: /metadata/annotations/t\n    value: '{{ print "key-" }}{{.#0}}'\n  - op: add\n    select: '$.metadata.labels[*]'\n    path: /metadata/annotations/c\n    value: 'v.#0'`,
        ),
      ],
      object,
    );
    expect(get(out.object, 'metadata.annotations.t')).toBe('key-a');
    // A value without {{ is a constant here; KubeMod would print "v(index .SelectKeyParts 0)" (docs/engine.md).
    expect(get(out.object, 'metadata.annotations.c')).toBe('v.#0');
  });
});
