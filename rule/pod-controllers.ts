import { escapeToken } from '../patch/pointer';
import { JsonObject, JsonValue } from '../util/json';
import type { CompiledRule, PodTemplateAt } from './compiled';
import { describe, Report } from './field-checks';

/*
 * spec.podControllers (beyond KubeMod, opt-in): the controller kinds whose pod templates a Pod rule also applies to.
 * Each kind is a compiled variant of the rule (rule/pod-variants.ts) pinned to the controller, with its selects and
 * paths moved under the template (rule/pod-templates.ts). A template the rule patched carries its marker annotation,
 * which the pods created from it inherit: the Pod rule skips those pods, so a change is made once, in the template.
 */

/** Where each controller kind keeps its pod template, and the apiVersion Kubernetes serves it as. */
export const POD_CONTROLLERS: Readonly<Record<string, Omit<PodTemplateAt, 'kind'>>> = Object.freeze({
  Deployment: { apiVersion: 'apps/v1', template: ['spec', 'template'] },
  StatefulSet: { apiVersion: 'apps/v1', template: ['spec', 'template'] },
  DaemonSet: { apiVersion: 'apps/v1', template: ['spec', 'template'] },
  ReplicaSet: { apiVersion: 'apps/v1', template: ['spec', 'template'] },
  Job: { apiVersion: 'batch/v1', template: ['spec', 'template'] },
  CronJob: { apiVersion: 'batch/v1', template: ['spec', 'jobTemplate', 'spec', 'template'] },
  ReplicationController: { apiVersion: 'v1', template: ['spec', 'template'] },
});

/** Every controller kind, in the order variants are compiled and shown. */
export const POD_CONTROLLER_KINDS: readonly string[] = Object.freeze(Object.keys(POD_CONTROLLERS));

const ALL = '*';

/** spec.podControllers read: the kinds named ("*" alone: all of them); [] when absent or empty; problems reported. */
export function podControllerKinds(raw: JsonValue | undefined, problem: Report): PodTemplateAt[] {
  if (raw === undefined || raw === null) return [];
  const at = 'spec.podControllers';
  if (!Array.isArray(raw)) {
    problem(at, `must be a list of controller kinds (${POD_CONTROLLER_KINDS.join(', ')}) or ["*"]`);
    return [];
  }
  const kinds = new Set<string>();
  raw.forEach((v, i) => {
    if (typeof v === 'string' && v === ALL) {
      if (raw.length > 1) problem(`${at}[${i}]`, '"*" stands for every controller kind: write it alone');
      for (const k of POD_CONTROLLER_KINDS) kinds.add(k);
    } else if (typeof v === 'string' && v in POD_CONTROLLERS) {
      if (kinds.has(v)) problem(`${at}[${i}]`, `Duplicate value: ${JSON.stringify(v)}`);
      kinds.add(v);
    } else {
      problem(`${at}[${i}]`, `must be one of ${POD_CONTROLLER_KINDS.join(', ')} or "*", got ${describe(v)}`);
    }
  });
  return POD_CONTROLLER_KINDS.filter((k) => kinds.has(k)).map((kind) => ({ kind, ...POD_CONTROLLERS[kind] }));
}

/** The prefix of the annotations recording which rule patched a pod template. */
export const MARKER_PREFIX = 'podtemplate.modrule.io/';

/**
 * The annotation a rule's variant puts on the pod templates it patched: `podtemplate.modrule.io/<namespace>.<name>`
 * (namespaces have no dots, so two rules never share it), cut with a hash past the 63 characters an annotation name
 * may have. Its value is the rule's `namespace/name`.
 */
export function markerAnnotation(namespace: string, name: string): string {
  const full = `${namespace}.${name}`;
  if (full.length <= 63) return MARKER_PREFIX + full;
  const head = full.slice(0, 54).replace(/[^a-z0-9]+$/, '');
  return `${MARKER_PREFIX}${head}-${fnv1a(full)}`;
}

/** The Pod rule's extra criterion: the pod was not created from a template this rule patched. */
export function markerMatchItem(namespace: string, name: string): JsonObject {
  return {
    select: `$.metadata.annotations[${JSON.stringify(markerAnnotation(namespace, name))}]`,
    matchValue: `${namespace}/${name}`,
    negate: true,
  };
}

/** A Patch variant's extra operation: the marker on the template it patched. */
export function markerPatch(namespace: string, name: string, template: readonly string[]): JsonObject {
  const path = [...template, 'metadata', 'annotations', markerAnnotation(namespace, name)];
  return {
    op: 'add',
    path: '/' + path.map(escapeToken).join('/'),
    value: JSON.stringify(`${namespace}/${name}`),
  };
}

/**
 * The field of a compiled rule's patch operation as the ModRule has it: a Patch variant's first operation is the
 * marker it adds (spec.podControllers), the rule's own come after it.
 */
export function patchField(rule: Pick<CompiledRule, 'podController' | 'type'>, index: number): string {
  if (!rule.podController || rule.type !== 'Patch') return `spec.patch[${index}]`;
  return index === 0 ? 'spec.podControllers' : `spec.patch[${index - 1}]`;
}

/** A rule as logs and explanations name it: `namespace/name`, and the controller kind for a variant. */
export function ruleLabel(rule: Pick<CompiledRule, 'key' | 'podController'>): string {
  return rule.podController ? `${rule.key} (${rule.podController.kind})` : rule.key;
}

// 32-bit FNV-1a as 8 hex digits: a short, stable suffix for long marker names.
function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}
