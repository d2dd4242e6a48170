import type { ImageFunctionName } from '../jsonpath/ast';
import { JsonValue } from '../util/json';
import {
  CEL_REFERENCE_MAX,
  CEL_REFERENCE_PATTERN,
  effectiveTag,
  MAX_NAME_LENGTH,
  parseImageReference,
  withRegistry,
} from '../util/image-reference';
import { celString } from './cel';
import { FieldPath } from './path';
import { pathGuard, Guard, Guards } from './guard';
import type { ArgNode } from '../template/ast';
import { messageOf } from '../util/errors';
import { NoCelForm } from './values';

/*
 * Image references in CEL (util/image-reference.ts's parts, with the string functions the API server's CEL has). The
 * CEL splits a reference as docker's splitDockerDomain does, which is right only for a valid reference: a guard
 * sends every value that is not a short, well-formed one (CEL_REFERENCE_PATTERN) to the webhook, which decides there.
 */

/** The template functions with a CEL twin: the four parts and imageWithRegistry. */
export type ImageFunction = ImageFunctionName | 'imageWithRegistry';

const IDENTIFIER = '^[a-f0-9]{64}$';

// CEL comprehension variables of the binding idiom `[x].map(v, ...)[0]` (distinct from the element variable `el`).
const S = 'imgS';
const N = 'imgN';
const D = 'imgD';
const P = 'imgP';

/** CEL: binds `value` to `name` inside `body`. */
function bind(value: string, name: string, body: string): string {
  return `[${value}].map(${name}, ${body})[0]`;
}

// Name and tag (before any @digest).
const named = `(${S}.indexOf("@") >= 0 ? ${S}.substring(0, ${S}.indexOf("@")) : ${S})`;
const hasTag = `${N}.lastIndexOf(":") > ${N}.lastIndexOf("/")`;
const digest = `(${S}.indexOf("@") >= 0 ? ${S}.substring(${S}.indexOf("@") + 1) : "")`;
const tag = bind(
  named,
  N,
  `${hasTag} ? ${N}.substring(${N}.lastIndexOf(":") + 1) : (${S}.indexOf("@") >= 0 ? "" : "latest")`,
);
// The name without its tag.
const name = bind(named, N, `${hasTag} ? ${N}.substring(0, ${N}.lastIndexOf(":")) : ${N}`);
const isRegistry = `${D} == "localhost" || ${D}.contains(".") || ${D}.contains(":") || ${D}.lowerAscii() != ${D}`;
const rest = `${N}.substring(${N}.indexOf("/") + 1)`;
// [registry, remainder] as splitDockerDomain gives them (before library/ is added).
const split = bind(
  name,
  N,
  `${N}.indexOf("/") < 0 ? ["docker.io", ${N}] : ${bind(
    `${N}.substring(0, ${N}.indexOf("/"))`,
    D,
    `${D} == "index.docker.io" ? ["docker.io", ${rest}] : (${isRegistry} ? [${D}, ${rest}] : ["docker.io", ${N}])`,
  )}`,
);
const repository = bind(
  split,
  P,
  `${P}[0] == "docker.io" && !${P}[1].contains("/") ? "library/" + ${P}[1] : ${P}[1]`,
);

const PARTS: Record<ImageFunctionName, string> = {
  imageRegistry: bind(split, P, `${P}[0]`),
  imageRepository: repository,
  imageTag: tag,
  imageDigest: digest,
};

/** CEL of a part of the reference in the string expression `value`. */
export function celImagePart(fn: ImageFunctionName, value: string): string {
  return bind(value, S, PARTS[fn]);
}

/** CEL of imageWithRegistry with a literal registry: registry/repository[:tag][@digest] as written. */
export function celWithRegistry(registry: string, value: string): string {
  const target = registry.endsWith('/') ? registry.slice(0, -1) : registry;
  return bind(
    value,
    S,
    `${celString(`${target}/`)} + ${repository} + ${bind(named, N, `${hasTag} ? ":" + ${N}.substring(${N}.lastIndexOf(":") + 1) : ""`)} + ` +
      `(${S}.indexOf("@") >= 0 ? ${S}.substring(${S}.indexOf("@")) : "")`,
  );
}

/** The same parts on the JSON side (the value passed the guard: a valid reference). */
export function imagePart(fn: ImageFunction, value: string, registry = ''): string {
  if (fn === 'imageWithRegistry') return withRegistry(registry, value);
  const ref = parseImageReference(value);
  if (fn === 'imageTag') return effectiveTag(ref);
  return fn === 'imageRegistry' ? ref.registry : fn === 'imageRepository' ? ref.repository : ref.digest;
}

/** The longest reference the guard lets through for imageWithRegistry(registry) (the result's name stays valid). */
export function maxReferenceFor(registry: string): number {
  // The name grows by the registry and "library/" at most: keep it within docker's limit.
  return Math.min(CEL_REFERENCE_MAX, MAX_NAME_LENGTH - 9 - registry.length);
}

const patternRe = new RegExp(CEL_REFERENCE_PATTERN);
const identifierRe = new RegExp(IDENTIFIER);

/**
 * The value at `path` is a short, well-formed reference (`absentOk`: or absent); every element of `list` when the
 * path is an element's.
 */
export function referenceGuard(
  path: FieldPath,
  list: FieldPath | undefined,
  absentOk: boolean,
  max = CEL_REFERENCE_MAX,
): Guard {
  return pathGuard(
    path,
    list,
    (v) =>
      `type(${v}) == string && size(${v}) <= ${max} && ${v}.matches(${celString(CEL_REFERENCE_PATTERN)}) && ` +
      `!${v}.matches(${celString(IDENTIFIER)})`,
    (v: JsonValue) => typeof v === 'string' && v.length <= max && patternRe.test(v) && !identifierRe.test(v),
    `an image reference of at most ${max} characters that the CEL reads as a runtime does`,
    absentOk,
    'text',
  );
}

/** The template functions with a CEL twin. */
export const IMAGE_TEMPLATE_FUNCTIONS: ReadonlySet<string> = new Set<ImageFunction>([
  'imageRegistry',
  'imageRepository',
  'imageTag',
  'imageDigest',
  'imageWithRegistry',
]);

/**
 * A template's image function on the value at `path`: its registry (imageWithRegistry: a string literal, refused as
 * the engine refuses it), with the guard that the value is a well-formed reference (the engine fails the rule for
 * anything else: the webhook keeps those objects). Throws NoCelForm.
 */
export function imageOf(
  fn: ImageFunction,
  registryArg: ArgNode | undefined,
  path: FieldPath,
  guards: Guards,
  list: FieldPath | undefined,
): { fn: ImageFunction; registry: string } {
  if (fn === 'imageWithRegistry' && registryArg?.type !== 'string')
    throw new NoCelForm('imageWithRegistry with a registry that is not a string literal');
  const registry = registryArg?.type === 'string' ? registryArg.value : '';
  if (fn === 'imageWithRegistry') {
    try {
      withRegistry(registry, 'nginx');
    } catch (err) {
      throw new NoCelForm(`imageWithRegistry: ${messageOf(err)}`);
    }
  }
  guards.add(
    referenceGuard(path, list, false, fn === 'imageWithRegistry' ? maxReferenceFor(registry) : undefined),
  );
  return { fn, registry };
}
