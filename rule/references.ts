import { isJsonObject, JsonValue } from '../util/json';
import { CompiledLabelSelector, compileLabelSelector } from './labelselector';
import { ClusterScoped, offlineClusterScoped } from './kinds';
import { describe, Report, unknownField } from './field-checks';
import { DEFAULT_CLUSTER_NAMESPACE } from './types';

/*
 * spec.references (beyond KubeMod): other objects a rule reads, each under syntheticRefs.<name>. Checked here with
 * field paths, including the tenant rules: a rule outside the cluster namespace reads only its own namespace, and
 * Secrets only when the operator allows them.
 */

/** What a rule may reference: where cluster-wide rules live, and whether Secrets may be read at all. */
export interface ReferencePolicy {
  readonly clusterNamespace: string;
  /** The operator's --allow-secret-references. */
  readonly allowSecrets: boolean;
  /** Which kinds are cluster-scoped: the API server's discovery in the operator; default the offline list. */
  readonly clusterScoped?: ClusterScoped;
}

/** The policy when nothing else is said: the default cluster namespace, no Secrets. */
export const DEFAULT_REFERENCE_POLICY: ReferencePolicy = {
  clusterNamespace: DEFAULT_CLUSTER_NAMESPACE,
  allowSecrets: false,
};

/** syntheticRefs keys the engine fills itself: a named reference cannot take them. */
export const RESERVED_REFERENCE_NAMES: ReadonlySet<string> = new Set(['namespace', 'node', 'owner']);

/** Most references one rule may declare. */
export const MAX_REFERENCES = 16;

/** One compiled entry of spec.references. */
export interface ReferenceDecl {
  /** The key under syntheticRefs. */
  readonly name: string;
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  /** Where the object is: the namespace given, else the rule's own; '' for cluster-scoped kinds. */
  readonly namespace: string;
  /** The object's name; undefined for a label selector. */
  readonly objectName?: string;
  readonly selector?: CompiledLabelSelector;
  /** The selector as written (canonical JSON): one cache entry for every rule with the same one. */
  readonly selectorKey?: string;
  /** Its field path, for status messages: spec.references[2]. */
  readonly field: string;
}

const FIELDS = new Set(['name', 'apiVersion', 'kind', 'namespace', 'objectName', 'labelSelector']);
// A name usable as `.Target.syntheticRefs.<name>` in a template and `$.syntheticRefs.<name>` in a select.
const REF_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
const KIND = /^[A-Z][A-Za-z0-9]{0,62}$/;
const VERSION = /^v[0-9]+(?:(?:alpha|beta)[0-9]+)?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Whether a group/kind is a Secret (core v1). */
export function isSecretKind(group: string, kind: string): boolean {
  return group === '' && kind === 'Secret';
}

/** The canonical text of a JSON value (sorted keys): equal selectors give equal keys. */
function canonical(v: JsonValue): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (isJsonObject(v))
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(',')}}`;
  return JSON.stringify(v);
}

function splitApiVersion(apiVersion: string): { group: string; version: string } | undefined {
  const parts = apiVersion.split('/');
  if (parts.length === 1) return VERSION.test(parts[0]) ? { group: '', version: parts[0] } : undefined;
  if (parts.length !== 2 || !DNS_SUBDOMAIN.test(parts[0]) || !VERSION.test(parts[1])) return undefined;
  return { group: parts[0], version: parts[1] };
}

/**
 * Checks spec.references and compiles it: the declarations, or undefined with every problem reported at its field.
 * `ruleNamespace` is the rule's own namespace ('' when it has none yet: offline tools fill it in before this runs).
 */
export function compileReferences(
  raw: JsonValue,
  ruleNamespace: string,
  policy: ReferencePolicy,
  problem: Report,
): ReferenceDecl[] | undefined {
  if (!Array.isArray(raw)) {
    problem('spec.references', 'must be a list of {name, apiVersion, kind, objectName or labelSelector}');
    return undefined;
  }
  const before = problem.count();
  if (raw.length > MAX_REFERENCES)
    problem('spec.references', `at most ${MAX_REFERENCES} references per ModRule, got ${raw.length}`);
  const names = new Set<string>();
  const out: ReferenceDecl[] = [];
  raw.forEach((entry, i) => {
    const decl = compileReference(entry, `spec.references[${i}]`, ruleNamespace, policy, problem);
    if (!decl) return;
    if (names.has(decl.name))
      problem(`spec.references[${i}].name`, `Duplicate value: "${decl.name}" is declared twice`);
    names.add(decl.name);
    out.push(decl);
  });
  return problem.count() === before ? out : undefined;
}

function compileReference(
  entry: JsonValue,
  at: string,
  ruleNamespace: string,
  policy: ReferencePolicy,
  problem: Report,
): ReferenceDecl | undefined {
  if (!isJsonObject(entry)) {
    problem(at, 'must be an object with name, apiVersion, kind and objectName or labelSelector');
    return undefined;
  }
  const before = problem.count();
  for (const key of Object.keys(entry))
    if (!FIELDS.has(key)) problem(`${at}.${key}`, unknownField(key, FIELDS));
  const { name, apiVersion, kind, namespace, objectName, labelSelector } = entry;

  if (typeof name !== 'string' || name === '') problem(`${at}.name`, 'required: the key under syntheticRefs');
  else if (!REF_NAME.test(name))
    problem(
      `${at}.name`,
      `Invalid value: ${describe(name)}: letters, digits and '_', not starting with a digit, at most 63 characters ` +
        '(it is read as .Target.syntheticRefs.<name>)',
    );
  else if (RESERVED_REFERENCE_NAMES.has(name))
    problem(`${at}.name`, `Invalid value: "${name}": syntheticRefs.${name} is filled in by modrule itself`);

  let gv: { group: string; version: string } | undefined;
  if (typeof apiVersion !== 'string' || apiVersion === '')
    problem(`${at}.apiVersion`, 'required, e.g. v1 or apps/v1');
  else if (!(gv = splitApiVersion(apiVersion)))
    problem(
      `${at}.apiVersion`,
      `Invalid value: ${describe(apiVersion)}: must be <version> or <group>/<version>`,
    );
  if (typeof kind !== 'string' || kind === '') problem(`${at}.kind`, 'required, e.g. ConfigMap');
  else if (!KIND.test(kind))
    problem(`${at}.kind`, `Invalid value: ${describe(kind)}: a kind such as ConfigMap`);

  const clusterScoped =
    typeof kind === 'string' && (policy.clusterScoped ?? offlineClusterScoped)(gv?.group ?? '', kind);
  const where = placeOf({ at, kind, namespace, clusterScoped, ruleNamespace, policy }, problem);
  if (gv && typeof kind === 'string' && isSecretKind(gv.group, kind) && !policy.allowSecrets)
    problem(
      `${at}.kind`,
      'Forbidden: Secret references are off; the operator reads Secrets only when started with ' +
        '--allow-secret-references',
    );

  const hasName = objectName !== undefined && objectName !== null;
  const hasSelector = labelSelector !== undefined && labelSelector !== null;
  if (hasName === hasSelector)
    problem(at, 'exactly one of objectName (one object) and labelSelector (a list of objects) is required');
  if (
    hasName &&
    (typeof objectName !== 'string' || !DNS_SUBDOMAIN.test(objectName) || objectName.length > 253)
  )
    problem(`${at}.objectName`, `Invalid value: ${describe(objectName)}: must be an object name`);
  let selector: CompiledLabelSelector | undefined;
  if (hasSelector) selector = compileLabelSelector(labelSelector, `${at}.labelSelector`, problem);

  if (problem.count() !== before || !gv) return undefined;
  return {
    name: name as string,
    group: gv.group,
    version: gv.version,
    kind: kind as string,
    namespace: where,
    ...(hasName ? { objectName: objectName as string } : {}),
    ...(selector ? { selector, selectorKey: canonical(labelSelector) } : {}),
    field: at,
  };
}

/** Where a reference's object is ('' for a cluster-scoped kind), with the tenant rules on namespace and scope. */
function placeOf(
  ref: {
    at: string;
    kind: JsonValue | undefined;
    namespace: JsonValue | undefined;
    clusterScoped: boolean;
    ruleNamespace: string;
    policy: ReferencePolicy;
  },
  problem: Report,
): string {
  const { at, kind, namespace, clusterScoped, ruleNamespace, policy } = ref;
  const wide = ruleNamespace === policy.clusterNamespace;
  let where = ruleNamespace;
  if (namespace !== undefined && namespace !== null) {
    if (typeof namespace !== 'string' || !DNS_LABEL.test(namespace) || namespace.length > 63)
      problem(`${at}.namespace`, `Invalid value: ${describe(namespace)}: must be a namespace name`);
    else if (clusterScoped)
      problem(`${at}.namespace`, `Forbidden: ${String(kind)} is cluster-scoped; leave namespace out`);
    else if (!wide && ruleNamespace !== '' && namespace !== ruleNamespace)
      problem(
        `${at}.namespace`,
        `Forbidden: a ModRule reads only objects of its own namespace (${ruleNamespace}); only ModRules in ` +
          `${policy.clusterNamespace} may read other namespaces`,
      );
    else where = namespace;
  }
  if (clusterScoped && !wide)
    problem(
      `${at}.kind`,
      `Forbidden: ${String(kind)} is cluster-scoped; only ModRules in ${policy.clusterNamespace} may read ` +
        'cluster-scoped objects',
    );
  return clusterScoped ? '' : where;
}

/**
 * What the scope of each kind `spec.references` names says now, one character per reference ('!' cluster-scoped,
 * '-' namespaced): a rule compiled when it said otherwise is compiled again (a CRD installed or changed since).
 */
export function referenceScopes(spec: JsonValue | undefined, policy: ReferencePolicy): string {
  const refs = isJsonObject(spec) ? spec.references : undefined;
  if (!Array.isArray(refs)) return '';
  const scoped = policy.clusterScoped ?? offlineClusterScoped;
  return refs
    .map((r) => {
      if (!isJsonObject(r) || typeof r.kind !== 'string') return '?';
      const gv = typeof r.apiVersion === 'string' ? splitApiVersion(r.apiVersion) : undefined;
      return scoped(gv?.group ?? '', r.kind) ? '!' : '-';
    })
    .join('');
}
