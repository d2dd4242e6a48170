import { isJsonObject, JsonObject, JsonValue } from '../util/json';
import { metadataOf } from '../util/meta';
import type { CompiledRule, PodTemplateAt } from '../rule/compile';

/*
 * What the templates of a Pod rule's controller variant see (spec.podControllers): `.Target` is the pod as the
 * controller's template describes it (kind Pod, the template's labels and annotations, the controller's namespace,
 * the template's spec, the controller's syntheticRefs), and `.Controller` the controller itself. The rule was refused
 * at admission if its templates read what this view lacks (name, uid, status...), so a template renders here what it
 * renders for the pods the controller creates.
 */

/** The pod a controller's template describes, as a Pod rule's templates read it. */
export function podView(controller: JsonValue, at: PodTemplateAt): JsonObject {
  let template: JsonValue | undefined = controller;
  for (const name of at.template) template = isJsonObject(template) ? template[name] : undefined;
  const source = isJsonObject(template) ? template : {};
  const controllerObject = isJsonObject(controller) ? controller : {};
  const namespace = metadataOf(controllerObject).namespace;
  const metadata = isJsonObject(source.metadata) ? source.metadata : {};
  const view: JsonObject = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: namespace === undefined ? metadata : { ...metadata, namespace },
  };
  if (source.spec !== undefined) view.spec = source.spec;
  if (controllerObject.syntheticRefs !== undefined) view.syntheticRefs = controllerObject.syntheticRefs;
  return view;
}

/** The template data of a rule for an object: `.Target` (the pod view for a variant, with `.Controller`) and `.Namespace`. */
export function templateData(
  rule: CompiledRule,
  target: JsonValue,
  namespace: string,
): Record<string, unknown> {
  const at = rule.podController;
  if (!at) return { Target: target, Namespace: namespace };
  return { Target: podView(target, at), Namespace: namespace, Controller: target };
}

/** What a rule's templates read as `.Target` (and `.Controller`, for a variant) of an object. */
export interface TemplateTarget {
  readonly target: JsonValue;
  readonly controller?: JsonValue;
}

/** The object as a rule's templates read it. */
export function templateTarget(rule: CompiledRule, target: JsonValue): TemplateTarget {
  const at = rule.podController;
  return at ? { target: podView(target, at), controller: target } : { target };
}
