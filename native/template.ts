import { isJsonObject, JsonObject, JsonValue } from '../util/json';
import type { ArgNode, CommandNode, Node } from '../template/ast';
import { formatGoFloat } from '../jsonpath';
import { celString, or } from './cel';
import {
  celPrint,
  celPrintable,
  celPrintableOrList,
  GuardCost,
  isPrintable,
  isPrintableList,
  MAX_PRINTED,
  pathGuard,
} from './guard';
import { ABSENT, celOptional, celValueOrNull, FieldPath, Found, rootValue, walk } from './path';
import { NoCelForm } from './values';
import { SelectContext, syntheticRefsMisfit } from './select-context';
import { movePodPath } from '../rule/pod-templates';
import {
  celImagePart,
  celWithRegistry,
  IMAGE_TEMPLATE_FUNCTIONS,
  ImageFunction,
  imageOf,
  imagePart,
} from './image';

/*
 * The Go templates of patch values and reject messages that have a CEL twin: text, field chains on .Target and
 * .SelectedItem, .Namespace, `index X "key"...`, `| replace "old" "new"` and the image functions (native/image.ts).
 * A printed value must be a string, a
 * boolean, a small integer, absent or null (<no value>), or a list of those: Go's %v and the CEL here print those
 * alike; guards send every other object to the webhook.
 */

/** One piece of the output. */
type Part =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'namespace' }
  | {
      readonly kind: 'value';
      readonly path: FieldPath;
      readonly replaces: ReadonlyArray<readonly [string, string]>;
      /** An image function applied to the value (native/image.ts). */
      readonly image?: { readonly fn: ImageFunction; readonly registry: string };
    };

/** A template compiled to CEL, with the same rendering in TypeScript (for guards on its output). */
export interface RenderedTemplate {
  /** CEL string expression of the output. */
  readonly cel: string;
  /** The output for an object the engine sees (and the selected element, for element paths). */
  render(object: JsonObject, element?: JsonValue): string;
  /** Only text: the output is constant. */
  readonly constant: string | undefined;
  /** The paths whose values it prints. */
  readonly inputs: readonly FieldPath[];
  /** When the output is only `imageWithRegistry R ...`: the registry of every reference it writes. */
  readonly registry?: string;
}

/** What a template may read besides .Target and .Namespace. */
export interface TemplateScope {
  /** Where .SelectedItem is (undefined: the operation has no select). */
  readonly selected?: FieldPath;
  /** The list a select iterates, when .SelectedItem is one of its elements. */
  readonly list?: FieldPath;
  readonly ctx: SelectContext;
}

/** Compiles a parsed template's body; throws NoCelForm. */
export function compileTemplateBody(root: readonly Node[], scope: TemplateScope): RenderedTemplate {
  const parts: Part[] = [];
  for (const node of root) {
    if (node.type === 'text') parts.push({ kind: 'text', text: node.text });
    else if (node.type === 'action') {
      if (node.pipe.decl.length > 0) throw new NoCelForm('template variables');
      parts.push(pipeline(node.pipe.cmds, scope));
    } else throw new NoCelForm(`{{ ${node.type} }} in a template`);
  }
  return rendered(parts);
}

function rendered(parts: readonly Part[]): RenderedTemplate {
  const cels = parts.map((p) =>
    p.kind === 'text' ? celString(p.text) : p.kind === 'namespace' ? NAMESPACE_CEL : printCel(p),
  );
  const merged = cels.filter((c) => c !== '""');
  const constant = parts.every((p) => p.kind === 'text')
    ? parts.map((p) => (p.kind === 'text' ? p.text : '')).join('')
    : undefined;
  const [only] = parts;
  const registry =
    parts.length === 1 && only.kind === 'value' && only.image?.fn === 'imageWithRegistry'
      ? imagePart('imageRegistry', imagePart('imageWithRegistry', 'nginx', only.image.registry))
      : undefined;
  return {
    ...(registry === undefined ? {} : { registry }),
    cel: merged.length === 0 ? '""' : merged.join(' + '),
    constant,
    inputs: parts.flatMap((p) => (p.kind === 'value' ? [p.path] : [])),
    render: (object, element) =>
      parts
        .map((p) =>
          p.kind === 'text'
            ? p.text
            : p.kind === 'namespace'
              ? namespaceOf(object)
              : printTs(p, object, element),
        )
        .join(''),
  };
}

/**
 * The engine's .Namespace: the request's namespace ('' for cluster-scoped objects and Namespaces). The API server
 * sets metadata.namespace to the request's before admission, so both sides read it from the object.
 */
const NAMESPACE_CEL =
  '(object[?"kind"].orValue("") == "Namespace" && object[?"apiVersion"].orValue("") == "v1" ? "" : ' +
  'object[?"metadata"][?"namespace"].orValue(""))';

function namespaceOf(object: JsonObject): string {
  if (object.kind === 'Namespace' && object.apiVersion === 'v1') return '';
  const meta = object.metadata;
  return isJsonObject(meta) && typeof meta.namespace === 'string' ? meta.namespace : '';
}

function pipeline(cmds: readonly CommandNode[], scope: TemplateScope): Part {
  const [first, ...rest] = cmds;
  let part = source(first.args, scope);
  for (const cmd of rest) {
    const [fn, ...args] = cmd.args;
    if (fn.type !== 'identifier') throw new NoCelForm(`a pipeline into ${cmd.text}`);
    if (IMAGE_TEMPLATE_FUNCTIONS.has(fn.name)) {
      part = imageCall(fn.name as ImageFunction, args, part, scope);
      continue;
    }
    if (fn.name !== 'replace') throw new NoCelForm(`Sprig ${fn.name} has no CEL twin here`);
    if (part.kind === 'value' && part.image) throw new NoCelForm("replace on an image function's value");
    if (part.kind !== 'value') throw new NoCelForm('replace on .Namespace');
    const [oldArg, newArg] = args;
    if (args.length !== 2 || oldArg.type !== 'string' || newArg.type !== 'string')
      throw new NoCelForm('replace with arguments other than two string literals');
    if (oldArg.value === '') throw new NoCelForm('replace of the empty string');
    if (part.replaces.length === 0) requireString(part.path, scope);
    part = { ...part, replaces: [...part.replaces, [oldArg.value, newArg.value]] };
  }
  if (part.kind === 'value' && part.replaces.length === 0 && !part.image) printableGuard(part.path, scope);
  return part;
}

/**
 * An image function's call: on a field (`imageTag .SelectedItem`) or piped into (`.SelectedItem | imageTag`).
 */
function imageCall(
  fn: ImageFunction,
  args: readonly ArgNode[],
  piped: Part | undefined,
  scope: TemplateScope,
): Part {
  const [registryArg, ...rest] = fn === 'imageWithRegistry' ? args : [undefined, ...args];
  let value = piped;
  if (!value) {
    const [field] = rest;
    if (rest.length !== 1 || field?.type !== 'field')
      throw new NoCelForm(`${fn} of something other than a field`);
    value = fieldChain(field.ident, scope);
  } else if (rest.length > 0) throw new NoCelForm(`${fn} with more arguments than it takes`);
  if (value.kind !== 'value' || value.replaces.length > 0 || value.image)
    throw new NoCelForm(`${fn} of something other than a field's value`);
  return { ...value, image: imageOf(fn, registryArg, value.path, scope.ctx.guards, scope.list) };
}

function source(args: readonly ArgNode[], scope: TemplateScope): Part {
  const [head, ...rest] = args;
  if (head.type === 'field') {
    if (rest.length > 0) throw new NoCelForm('a field with arguments');
    return fieldChain(head.ident, scope);
  }
  if (head.type === 'identifier' && head.name === 'index') {
    const [target, ...keys] = rest;
    if (!target || target.type !== 'field' || keys.length === 0)
      throw new NoCelForm('index of something other than a field, or without keys');
    const base = fieldChain(target.ident, scope);
    if (base.kind !== 'value') throw new NoCelForm('index of .Namespace');
    let path = base.path;
    for (const key of keys) {
      if (key.type !== 'string') throw new NoCelForm('index with a key that is not a string literal');
      // Go's index: the indexed value must be there and be a map (nil or a missing value is an error).
      requireMap(path, scope);
      path = { root: path.root, tokens: [...path.tokens, key.value] };
    }
    recordRead(path, scope);
    return { kind: 'value', path, replaces: [] };
  }
  if (head.type === 'identifier' && IMAGE_TEMPLATE_FUNCTIONS.has(head.name))
    return imageCall(head.name as ImageFunction, rest, undefined, scope);
  if (head.type === 'identifier')
    throw new NoCelForm(`the template function ${head.name} has no CEL twin here`);
  throw new NoCelForm(`{{ ${head.type} }} in a template`);
}

/**
 * For a controller variant (spec.podControllers): where .Target (the pod its template describes, engine/pod-view.ts)
 * and .Controller read in the object; undefined for any other rule or field.
 */
function podViewPath(head: string, rest: readonly string[], scope: TemplateScope): FieldPath | undefined {
  const pod = scope.ctx.podController;
  if (!pod) return undefined;
  if (head === 'Controller') {
    if (rest.length === 0) throw new NoCelForm('printing the whole object');
    return { root: { kind: 'object' }, tokens: [...rest] };
  }
  if (head !== 'Target' || rest[0] === 'syntheticRefs') return undefined;
  if (rest.length === 0 || rest[0] === 'kind' || rest[0] === 'apiVersion')
    throw new NoCelForm(`.Target${rest.length ? `.${rest[0]}` : ''} of the pod a template describes`);
  const moved = movePodPath(rest, pod.template);
  if (typeof moved === 'string') throw new NoCelForm(moved);
  return { root: { kind: 'object' }, tokens: moved };
}

function fieldChain(ident: readonly string[], scope: TemplateScope): Part {
  const [head, ...rest] = ident;
  if (head === 'Namespace' && rest.length === 0) return { kind: 'namespace' };
  let path: FieldPath;
  const pod = podViewPath(head, rest, scope);
  if (pod) {
    path = pod;
  } else if (head === 'Target') {
    if (rest[0] === 'syntheticRefs') {
      if (
        rest[1] !== 'namespace' ||
        rest[2] !== 'metadata' ||
        !['labels', 'name', 'annotations'].includes(rest[3])
      )
        throw new NoCelForm(
          rest[1] === 'namespace'
            ? 'only metadata.name/labels/annotations of syntheticRefs.namespace compile'
            : syntheticRefsMisfit(String(rest[1])),
        );
      path = { root: { kind: 'namespace' }, tokens: rest.slice(2) };
    } else {
      if (rest.length === 0) throw new NoCelForm('printing the whole object');
      if (rest[0] === 'metadata' && rest[1] === 'managedFields')
        throw new NoCelForm('metadata.managedFields (hidden from rules by the webhook)');
      path = { root: { kind: 'object' }, tokens: rest };
    }
  } else if (head === 'SelectedItem') {
    if (!scope.selected) throw new NoCelForm('.SelectedItem without a select');
    path = { root: scope.selected.root, tokens: [...scope.selected.tokens, ...rest] };
  } else {
    throw new NoCelForm(`.${head} has no CEL counterpart here`);
  }
  // Go: a missing member prints <no value>, also further down the chain; nil or a non-map in between is an error.
  for (
    let i = scope.selected && head === 'SelectedItem' ? scope.selected.tokens.length : 0;
    i < path.tokens.length;
    i++
  )
    mapOrAbsent({ root: path.root, tokens: path.tokens.slice(0, i) }, scope);
  recordRead(path, scope);
  return { kind: 'value', path, replaces: [] };
}

function recordRead(path: FieldPath, scope: TemplateScope): void {
  if (path.root.kind === 'element') {
    if (scope.list)
      scope.ctx.reads.push({ root: 'object', tokens: [...scope.list.tokens, '*', ...path.tokens] });
    return;
  }
  scope.ctx.reads.push({ root: path.root.kind, tokens: [...path.tokens] });
}

function guard(
  path: FieldPath,
  scope: TemplateScope,
  celOf: (v: string) => string,
  test: (v: JsonValue) => boolean,
  what: string,
  absentOk = true,
  cost: GuardCost = 'fixed',
): void {
  scope.ctx.guards.add(pathGuard(path, scope.list, celOf, test, what, absentOk, cost));
}

/**
 * The values a rendered patch value prints are strings of at most MAX_PRINTED characters (or absent, null, a
 * boolean or a number: short when printed): building and checking the rendered text then costs CEL a bounded
 * amount, whatever the object holds. Longer values, and lists, go to the webhook.
 */
export function boundedInputs(rendered: RenderedTemplate, scope: TemplateScope): void {
  for (const path of rendered.inputs) {
    if (path.root.kind === 'namespace') continue; // names, labels and annotations of a Namespace: bounded
    guard(
      path,
      scope,
      (v) => `type(${v}) == string ? size(${v}) <= ${MAX_PRINTED} : type(${v}) != list && type(${v}) != map`,
      (v) => (typeof v === 'string' ? [...v].length <= MAX_PRINTED : !Array.isArray(v) && !isJsonObject(v)),
      `printed values are at most ${MAX_PRINTED} characters`,
    );
  }
}

function mapOrAbsent(path: FieldPath, scope: TemplateScope): void {
  if (path.root.kind === 'namespace' || (path.root.kind === 'object' && path.tokens.length === 0)) return;
  guard(path, scope, (v) => `type(${v}) == map`, isJsonObject, 'a map along a template field chain');
}

function requireMap(path: FieldPath, scope: TemplateScope): void {
  guard(path, scope, (v) => `type(${v}) == map`, isJsonObject, 'index of a map', false);
}

function requireString(path: FieldPath, scope: TemplateScope): void {
  guard(
    path,
    scope,
    (v) => `type(${v}) == string`,
    (v) => typeof v === 'string',
    'replace of a string',
    false,
  );
}

function printableGuard(path: FieldPath, scope: TemplateScope): void {
  guard(
    path,
    scope,
    (v) => or([`${v} == null`, celPrintableOrList(v), celPrintable(v)]),
    (v) => v === null || (Array.isArray(v) ? isPrintableList(v) : isPrintable(v)),
    'a value Go and CEL print alike',
    true,
    'elements',
  );
}

function printCel(p: Extract<Part, { kind: 'value' }>): string {
  const opt = celOptional(p.path);
  if (p.image) {
    const value = `string(${opt}.value())`;
    return p.image.fn === 'imageWithRegistry'
      ? celWithRegistry(p.image.registry, value)
      : celImagePart(p.image.fn, value);
  }
  if (p.replaces.length > 0) {
    let out = `dyn(${opt}.value())`;
    for (const [a, b] of p.replaces) out = `${out}.replace(${celString(a)}, ${celString(b)})`;
    return `string(${out})`;
  }
  const v = 'p';
  const one = celPrint(v);
  const listText = `"[" + ${v}.map(y, ${celPrint('y')}).join(" ") + "]"`;
  return `[${celValueOrNull(p.path)}].map(${v}, ${v} == null ? "<no value>" : (type(${v}) == list ? ${listText} : ${one}))[0]`;
}

function printTs(p: Extract<Part, { kind: 'value' }>, object: JsonObject, element?: JsonValue): string {
  const base = rootValue(p.path.root, object, element);
  const v: Found = base === ABSENT ? ABSENT : walk(base, p.path.tokens);
  if (p.image) return typeof v === 'string' ? imagePart(p.image.fn, v, p.image.registry) : '';
  if (p.replaces.length > 0) {
    let s = typeof v === 'string' ? v : '';
    for (const [a, b] of p.replaces) s = s.split(a).join(b);
    return s;
  }
  return goPrint(v);
}

function goPrint(v: Found): string {
  if (v === ABSENT || v === null) return '<no value>';
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean') return String(v);
  if (typeof v === 'number') return formatGoFloat(v);
  if (Array.isArray(v)) return `[${v.map((x) => goPrint(x)).join(' ')}]`;
  return '';
}
