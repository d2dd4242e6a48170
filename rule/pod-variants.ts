import { JsonPathNode } from '../jsonpath';
import { printJsonPath } from '../jsonpath/print';
import { compileSharedTemplate } from '../template';
import { formatPointer, parsePointer } from '../patch/pointer';
import { JsonObject, JsonValue } from '../util/json';
import type { CompiledMatchItem, CompiledPatchOperation, PodTemplateAt } from './compiled';
import type { Report } from './field-checks';
import { itemPin, PinnedField } from './pins';
import { markerMatchItem, markerPatch, POD_CONTROLLER_KINDS } from './pod-controllers';
import { movePodPath, moveSelect, podChainRefusal, Refusal } from './pod-templates';
import { forEachTargetChain } from './template-chains';

/*
 * The spec of a Pod rule's variant for one controller kind: its Pod criterion replaced by the controller's kind and
 * apiVersion, every select and patch path moved under the pod template, the marker annotation written with the patch
 * (Patch rules). Templates are not rewritten: they see the pod as the template describes it (engine/pod-view.ts), so
 * they are only checked for reads a template cannot answer. Everything the rule reads is checked for every kind; a
 * rule that cannot be moved faithfully is refused with the field and the reason.
 */

/** What the variant specs are built from: the valid rule's spec and its compiled match and patch. */
export interface PodRuleParts {
  readonly namespace: string;
  readonly name: string;
  readonly spec: JsonObject;
  readonly match: readonly CompiledMatchItem[];
  readonly patch: readonly CompiledPatchOperation[];
  readonly rejectMessage?: string;
}

const WHY = 'cannot move to pod templates (spec.podControllers)';

/**
 * The variant spec for each controller (undefined for a controller the rule's operations leave nothing to do on), or
 * none with the problems reported (each field once).
 */
export function podVariantSpecs(
  rule: PodRuleParts,
  controllers: readonly PodTemplateAt[],
  problem: Report,
): Array<JsonObject | undefined> {
  const seen = new Set<string>();
  const before = problem.count();
  const once = (field: string, message: string) => {
    const key = `${field}\n${message}`;
    if (seen.has(key)) return;
    seen.add(key);
    problem(field, message);
  };
  checkTemplates(rule, once);
  const specs = controllers.map((c) => variantSpec(rule, c, once));
  return problem.count() === before ? specs : [];
}

function variantSpec(
  rule: PodRuleParts,
  at: PodTemplateAt,
  problem: (f: string, m: string) => void,
): JsonObject | undefined {
  const { podControllers: _omit, ...spec } = rule.spec;
  const match = variantMatch(rule, at, problem);
  const patch: JsonObject = Array.isArray(rule.spec.patch) ? { patch: variantPatch(rule, at, problem) } : {};
  const operations = operationsFor(at, rule.spec.admissionOperations);
  if (operations?.length === 0) return undefined;
  return { ...spec, match, ...patch, ...(operations ? { admissionOperations: operations } : {}) };
}

/**
 * A Job's pod template is immutable once the Job exists: its variant acts on CREATE (and DELETE, for Reject rules)
 * only, as a change on UPDATE would make the API server refuse the Job controller's own updates. Undefined: the
 * rule's operations as they are.
 */
function operationsFor(at: PodTemplateAt, raw: JsonValue | undefined): string[] | undefined {
  if (at.kind !== 'Job') return undefined;
  const given = Array.isArray(raw) && raw.length > 0 ? raw.map(String) : ['CREATE', 'UPDATE'];
  return given.filter((op) => op !== 'UPDATE');
}

/**
 * What a variant skips besides the Pod rule's own criteria: a template carrying the rule's marker (it has the change,
 * for a Patch rule: a ReplicaSet or a Job a patched Deployment or CronJob made, a controller the webhook sees again),
 * and a ReplicaSet a Deployment controls (its template must stay the Deployment's, or the Deployment controller makes
 * a new ReplicaSet for ever: the Deployment's own variant, or the Pod rule on its pods, does the work).
 */
function skips(rule: PodRuleParts, at: PodTemplateAt): JsonObject[] {
  const out: JsonObject[] = [];
  if (rule.spec.type === 'Patch') {
    const marker = markerMatchItem(rule.namespace, rule.name);
    out.push({ ...marker, select: `$.${at.template.join('.')}${String(marker.select).slice(1)}` });
  }
  if (at.kind === 'ReplicaSet')
    out.push({
      select: '$.metadata.ownerReferences[? @.controller == true && @.kind == "Deployment"]',
      negate: true,
    });
  return out;
}

function variantMatch(
  rule: PodRuleParts,
  at: PodTemplateAt,
  problem: (f: string, m: string) => void,
): JsonValue[] {
  const raw = rule.spec.match as JsonObject[];
  const out: JsonValue[] = [];
  let pinned = false;
  rule.match.forEach((item, i) => {
    const kind = pinOf(item, 'kind', 'Pod', POD_CONTROLLER_KINDS);
    if (kind === 'other')
      problem(`spec.match[${i}]`, `${WHY}: with podControllers the rule must select Pods only`);
    if (kind === 'this') {
      out.push({ select: '$.kind', matchValue: at.kind });
      pinned = true;
      return;
    }
    if (pinOf(item, 'apiVersion', 'v1', []) === 'this') {
      out.push({ select: '$.apiVersion', matchValue: at.apiVersion });
      return;
    }
    const select = moved(item.select.ast, at, `spec.match[${i}].select`, problem);
    out.push({ ...raw[i], ...(select === undefined ? {} : { select }) });
  });
  if (!pinned)
    problem(
      'spec.podControllers',
      'applies to rules that select Pods: add the match item {select: $.kind, matchValue: Pod}',
    );
  // After the rule's own criteria (so their indices stay theirs): the apiVersion, and what a variant skips.
  const version = hasVersionPin(rule.match) ? [] : [{ select: '$.apiVersion', matchValue: at.apiVersion }];
  return [...out, ...version, ...skips(rule, at)];
}

function variantPatch(
  rule: PodRuleParts,
  at: PodTemplateAt,
  problem: (f: string, m: string) => void,
): JsonValue[] {
  const raw = rule.spec.patch as JsonObject[];
  const out: JsonValue[] = raw.map((op, i) => {
    const field = `spec.patch[${i}]`;
    const tokens = parsePointer(String(op.path));
    // Which part of the pod a path writes must be known: no placeholder for its field (or metadata's).
    const head = tokens.slice(0, tokens[0] === 'metadata' ? 2 : 1);
    let path = String(op.path);
    if (head.some((t) => /#\d/.test(t)) && rule.patch[i].select) {
      problem(`${field}.path`, `${WHY}: a placeholder where the path names the pod's field`);
    } else {
      const to = movePodPath(tokens, at.template);
      if (typeof to === 'string') problem(`${field}.path`, `${WHY}: ${to}`);
      else path = formatPointer(to);
    }
    const select = rule.patch[i].select;
    const movedSelect = select ? moved(select.ast, at, `${field}.select`, problem) : undefined;
    return { ...op, path, ...(movedSelect === undefined ? {} : { select: movedSelect }) };
  });
  // The marker first: it creates the template's missing parents before the rule's own operations write below them
  // (what the native compiler needs to know; rule/pod-controllers.ts patchField maps the indices back).
  if (rule.spec.type === 'Patch') out.unshift(markerPatch(rule.namespace, rule.name, at.template));
  return out;
}

function moved(
  ast: JsonPathNode,
  at: PodTemplateAt,
  field: string,
  problem: (f: string, m: string) => void,
): string | undefined {
  const result = moveSelect(ast, at.template);
  if (typeof result !== 'object') {
    problem(field, `${WHY}: ${result ?? 'not movable'}`);
    return undefined;
  }
  return printJsonPath(result);
}

/** Templates are not moved: they must not read what the pod view lacks. */
function checkTemplates(rule: PodRuleParts, problem: (f: string, m: string) => void): void {
  const check = (source: string, field: string) => {
    let refusal: Refusal;
    forEachTargetChain(
      compileSharedTemplate(source).tree,
      (chain) => {
        refusal ??= podChainRefusal(chain);
      },
      true,
    );
    if (refusal) problem(field, `${WHY}: the template reads .Target as the pod, and ${refusal}`);
  };
  rule.patch.forEach((op, i) => {
    if (op.value.kind === 'template') check(op.value.template.source, `spec.patch[${i}].value`);
  });
  if (rule.rejectMessage !== undefined) check(rule.rejectMessage, 'spec.rejectMessage');
}

/**
 * Whether an item is the rule's criterion on `field` alone (a definite `$.kind`, or a comparison reading nothing
 * else), and whether it selects `value` only ('this'), other values too ('other'), or is no such item (null).
 */
function pinOf(
  item: CompiledMatchItem,
  field: PinnedField,
  value: string,
  others: readonly string[],
): 'this' | 'other' | null {
  if (!readsOnly(item.select.ast, field)) return null;
  const pin = itemPin(item, field);
  if (!pin) return null;
  if ('values' in pin) {
    if (!pin.values.has(value)) return null;
    return pin.values.size === 1 ? 'this' : 'other';
  }
  if (!pin.regex.test(value)) return null;
  return others.some((o) => pin.regex.test(o)) ? 'other' : 'this';
}

function hasVersionPin(match: readonly CompiledMatchItem[]): boolean {
  return match.some((item) => pinOf(item, 'apiVersion', 'v1', []) === 'this');
}

/** Whether every path of a select is `$.<field>` (a pin on that field and nothing else). */
function readsOnly(node: JsonPathNode, field: PinnedField): boolean {
  switch (node.kind) {
    case 'literal':
      return true;
    case 'array':
      return node.items.every((n) => readsOnly(n, field));
    case 'unary':
      return readsOnly(node.operand, field);
    case 'binary':
      return readsOnly(node.left, field) && readsOnly(node.right, field);
    case 'call':
      return false;
    case 'path':
      return (
        node.root === '$' &&
        node.segments.length === 1 &&
        node.segments[0].type === 'name' &&
        node.segments[0].name === field
      );
  }
}
