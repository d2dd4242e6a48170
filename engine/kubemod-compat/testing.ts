// Helpers of the KubeMod-compatibility suite (excluded from the build): ModRules from YAML snippets, an admit() of
// them on an object that checks the engine's invariants (../testing.ts), readers for the result, and the fixtures
// the cases share.
import { parseAllDocuments } from 'yaml';
import { loadFixture } from '../../fixtures/load';
import { cloneJson, JsonObject, JsonValue } from '../../util/json';
import { LAST_APPLIED_ANNOTATION } from '../../rule/types';
import { AdmissionOutcome } from '../admit';
import { admitChecked, AdmitOptions, storeFromYaml } from '../testing';

/** A ModRule document from a name, an optional namespace and a YAML spec body. */
export function modrule(name: string, spec: string, namespace = 'default'): string {
  const body = spec
    .trim()
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');
  return `apiVersion: api.kubemod.io/v1beta1\nkind: ModRule\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\nspec:\n${body}\n`;
}

/** The first document of a YAML text, as an object. */
export function parseRule(text: string): JsonObject {
  return parseAllDocuments(text)[0].toJS() as JsonObject;
}

/** admitChecked's options, and the cluster objects (Namespaces, Nodes) the store holds. */
export interface RunOptions extends AdmitOptions {
  cluster?: readonly JsonObject[];
}

/** Admits `object` against a store of these ModRules (YAML texts), checking the engine's invariants. */
export function run(
  rules: readonly string[],
  object: JsonObject | null,
  o: RunOptions = {},
): AdmissionOutcome {
  return admitChecked(storeFromYaml(rules, { cluster: o.cluster }), object, o);
}

/** The value at a dotted path (`metadata.labels.app`, `spec.containers.0`), or undefined. */
export function get(obj: JsonValue | null | undefined, path: string): JsonValue | undefined {
  let cur: JsonValue | undefined = obj ?? undefined;
  for (const part of path.split('.').filter((p) => p !== '')) {
    if (cur === null || typeof cur !== 'object' || cur === undefined) return undefined;
    cur = Array.isArray(cur) ? cur[Number(part)] : cur[part];
  }
  return cur;
}

/** The object's labels ({} without). */
export function labels(o: JsonObject | null): JsonObject {
  return (get(o, 'metadata.labels') ?? {}) as JsonObject;
}

/** The object's last-applied-configuration, parsed. */
export function lastApplied(o: JsonObject | null): JsonObject {
  const annotations = get(o, 'metadata.annotations') as JsonObject;
  return JSON.parse(annotations[LAST_APPLIED_ANNOTATION] as string) as JsonObject;
}

/** A copy of `obj` changed by `change`. */
export function withChanges(obj: JsonObject, change: (o: JsonObject) => void): JsonObject {
  const copy = cloneJson(obj);
  change(copy);
  return copy;
}

/** The realistic fixtures (fixtures/), as the API server sends them. */
export const deployment = loadFixture('deployment');
export const pod = loadFixture('pod');
export const service = loadFixture('service');
export const namespaceObj = loadFixture('namespace');
export const node = loadFixture('node');

/** A pod with two containers; only the first listens on 80 and only the second runs as non-root. */
export const pod2 = withChanges(pod, (p) => {
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

export const podNonRoot = withChanges(pod, (p) => {
  ((p.spec as JsonObject).securityContext as JsonObject).runAsNonRoot = true;
});

export const serviceIPs = (ips: string[] | undefined): JsonObject =>
  withChanges(service, (s) => {
    if (ips === undefined) delete (s.spec as JsonObject).externalIPs;
    else (s.spec as JsonObject).externalIPs = ips;
  });

/** Does a Reject rule with this match section reject the object (admitted in `default`)? */
export function matches(match: string, object: JsonObject): boolean {
  const out = run([modrule('m', `type: Reject\nmatch:\n${match}`)], object);
  return out.rejections.length === 1;
}

/** Match sections: the object is a Deployment, a Pod. */
export const isDeployment = `match:\n  - select: '$.kind'\n    matchValue: Deployment`;
export const isPod = `match:\n  - select: '$.kind'\n    matchValue: Pod`;

/** A Patch ModRule from a name, a match section and a patch list (YAML), with extra spec fields before them. */
export function patchRule(name: string, match: string, patch: string, extra = ''): string {
  return modrule(name, `type: Patch\n${extra}${match}\npatch:\n${patch}`);
}

/** A JSON value with every object's keys sorted, as a sorting writer prints it. */
export function sortKeys(v: JsonValue): JsonValue {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(sortKeys);
  const out: JsonObject = {};
  for (const k of Object.keys(v).sort()) out[k] = sortKeys(v[k]);
  return out;
}
