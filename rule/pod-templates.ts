import type { JsonPathNode, PathNode, Segment } from '../jsonpath';
import { Chain, WHOLE } from './template-chains';

/*
 * Moving what a Pod rule reads and writes to a controller's pod template: `$.spec...` to `$.spec.template.spec...`
 * (a CronJob's `$.spec.jobTemplate.spec.template.spec...`), the pod's labels and annotations to the template's, patch
 * paths the same way. `$.metadata.namespace` and `$.syntheticRefs.namespace` stay: the controller is in the pod's
 * namespace. What a template does not have (the pod's name, uid, owners, status, node...) cannot be moved: the
 * caller refuses the rule with the reason given here, never half-applies it.
 */

/** Why a read or write cannot move to the pod template; undefined when it can. */
export type Refusal = string | undefined;

// Pod metadata fields a template has no counterpart of (the API server, or the controller, sets them per pod).
const POD_ONLY_METADATA = new Set([
  'name',
  'generateName',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'ownerReferences',
  'finalizers',
  'managedFields',
  'selfLink',
]);

/** Labels the controllers add to the pods they create: their templates do not have them. */
export const CONTROLLER_LABELS: ReadonlySet<string> = new Set([
  'pod-template-hash',
  'controller-revision-hash',
  'statefulset.kubernetes.io/pod-name',
  'apps.kubernetes.io/pod-index',
  'pod-template-generation',
  'controller-uid',
  'job-name',
  'batch.kubernetes.io/controller-uid',
  'batch.kubernetes.io/job-name',
  'batch.kubernetes.io/job-completion-index',
]);

// Names a search from the pod's root (`$..x`) would find outside what the template holds.
const POD_ONLY_NAMES = new Set([
  ...POD_ONLY_METADATA,
  'status',
  'nodeName',
  'kind',
  'apiVersion',
  'namespace',
]);

/**
 * Where a path of member names from the pod's root goes in the controller (`template`: the template's path): the
 * moved names, or the reason it cannot move. Names only: the callers stop at the first step that is not one.
 */
export function movePodPath(names: readonly string[], template: readonly string[]): string[] | string {
  const [first, second, third] = names;
  switch (first) {
    case undefined:
      return 'it reads the whole pod: read its fields ($.spec..., $.metadata.labels...)';
    case 'spec':
      if (second === 'nodeName')
        return "spec.nodeName is the pod's node, set when it is scheduled: a template has none";
      return [...template, ...names];
    case 'metadata':
      if (second === 'labels' || second === 'annotations') {
        if (second === 'labels' && third !== undefined && CONTROLLER_LABELS.has(third))
          return `the label ${third} is added by the controller to the pods it creates: the template has none`;
        return [...template, ...names];
      }
      if (second === 'namespace') return [...names];
      if (second === undefined) return "it reads the pod's metadata whole: read its labels or annotations";
      return POD_ONLY_METADATA.has(second)
        ? `metadata.${second} is the pod's own: a pod template has none`
        : `metadata.${second} is not part of a pod template (only labels and annotations are)`;
    case 'status':
      return "it reads the pod's status: a pod template has none";
    case 'kind':
    case 'apiVersion':
      return `${first} is the controller's, not Pod (only the rule's Pod criterion may read it)`;
    case 'syntheticRefs':
      if (second === 'node') return "syntheticRefs.node is the pod's node: a template is on none";
      if (second === 'owner')
        return "syntheticRefs.owner is the pod's owner chain: the controller's is not the same";
      return [...names];
    default:
      return `${first} is not part of a pod`;
  }
}

/** What a chain of names .Target reads (a template's view of the pod): why it cannot be moved, or undefined. */
export function podChainRefusal(chain: Chain): Refusal {
  const names = chain.filter((n): n is string => n !== WHOLE);
  // The pod view (engine/pod-view.ts) has kind Pod and apiVersion v1, and the whole spec of the template.
  if (names.length === 1 && (names[0] === 'kind' || names[0] === 'apiVersion' || names[0] === 'spec'))
    return undefined;
  if (names[0] === 'syntheticRefs' && names.length === 1) return undefined;
  const moved = movePodPath(names, ['spec', 'template']);
  return typeof moved === 'string' ? moved : undefined;
}

/**
 * A select with every path from `$` moved under the template; `@` paths (inside filters) are relative and stay.
 * `$..x` searches the template (`$.spec.template..x`) unless `x` is something only the pod has.
 */
export function moveSelect(node: JsonPathNode, template: readonly string[]): JsonPathNode | Refusal {
  switch (node.kind) {
    case 'literal':
      return node;
    case 'array':
      return all(node.items, template, (items) => ({ ...node, items }));
    case 'unary': {
      const operand = moveSelect(node.operand, template);
      return typeof operand === 'object' ? { ...node, operand } : operand;
    }
    case 'binary': {
      const left = moveSelect(node.left, template);
      if (typeof left !== 'object') return left;
      const right = moveSelect(node.right, template);
      return typeof right === 'object' ? { ...node, left, right } : right;
    }
    case 'call':
      return all(node.args, template, (args) => ({ ...node, args }));
    case 'path':
      return movePathNode(node, template);
  }
}

function all<T extends JsonPathNode>(
  nodes: readonly JsonPathNode[],
  template: readonly string[],
  build: (moved: JsonPathNode[]) => T,
): T | Refusal {
  const out: JsonPathNode[] = [];
  for (const n of nodes) {
    const moved = moveSelect(n, template);
    if (typeof moved !== 'object') return moved;
    out.push(moved);
  }
  return build(out);
}

function movePathNode(node: PathNode, template: readonly string[]): PathNode | Refusal {
  const segments: Segment[] = [];
  // Inner expressions (filters, scripts, computed keys) may read from `$` too.
  for (const s of node.segments) {
    const inner = moveSegment(s, template);
    if (typeof inner !== 'object') return inner;
    segments.push(inner);
  }
  if (node.root === '@') return { ...node, segments };
  const head = leadingNames(segments);
  if (head.length === 0) return descentFromRoot(node, segments, template);
  const next = segments[head.length];
  if (next?.type === 'descent' && head[0] !== 'spec' && head.length < 3)
    return 'a search (..) from above the pod spec reaches what only the pod has: start it at $.spec';
  const moved = movePodPath(head, template);
  if (typeof moved === 'string') return moved;
  const rest = segments.slice(head.length);
  return { ...node, segments: [...moved.map((name) => ({ type: 'name' as const, name })), ...rest] };
}

function moveSegment(s: Segment, template: readonly string[]): Segment | Refusal {
  if (s.type === 'filter') {
    const predicate = moveSelect(s.predicate, template);
    return typeof predicate === 'object' ? { ...s, predicate } : predicate;
  }
  if (s.type === 'script') {
    const script = moveSelect(s.script, template);
    return typeof script === 'object' ? { ...s, script } : script;
  }
  if (s.type === 'key') {
    const key = moveSelect(s.key, template);
    return typeof key === 'object' ? { ...s, key } : key;
  }
  return s;
}

/** The names a path starts with (a one-name union counts as its name). */
function leadingNames(segments: readonly Segment[]): string[] {
  const out: string[] = [];
  for (const s of segments) {
    if (s.type === 'name') out.push(s.name);
    else if (s.type === 'union' && s.keys.length === 1 && typeof s.keys[0] === 'string') out.push(s.keys[0]);
    else break;
  }
  return out;
}

function descentFromRoot(
  node: PathNode,
  segments: Segment[],
  template: readonly string[],
): PathNode | Refusal {
  const [first, second] = segments;
  if (first === undefined) return 'it reads the whole pod: read its fields ($.spec..., $.metadata.labels...)';
  if (first.type !== 'descent')
    return `a ${first.type} at the pod's root reaches what only the pod has: name the field ($.spec...)`;
  if (second?.type !== 'name')
    return 'a search (..) from the root for anything but a name reaches what only the pod has: start it at $.spec';
  if (POD_ONLY_NAMES.has(second.name))
    return `a search for ${second.name} finds the pod's own fields, which a template does not have`;
  return { ...node, segments: [...template.map((name) => ({ type: 'name' as const, name })), ...segments] };
}
