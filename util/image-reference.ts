import { compileRegex } from './regex';

/*
 * Container image references as the container runtimes read them: docker's reference grammar and normalisation
 * (github.com/distribution/reference, ParseNormalizedNamed). `nginx:1.25` is docker.io/library/nginx:1.25;
 * `localhost:5000/app` has a registry with a port; the first path component is a registry only when it holds a `.`
 * or a `:`, is `localhost`, or has upper-case letters; `index.docker.io` is docker.io; a digest may follow a tag.
 * Pure: the template functions, the select functions and the native compiler all read references here.
 */

/** The parts of a reference, normalised. */
export interface ImageReference {
  /** The registry: `docker.io` for Docker Hub (written or not, `index.docker.io` too), else as written (with its port). */
  readonly registry: string;
  /** The repository path: `library/nginx` for Docker Hub's official images, written `nginx`. */
  readonly repository: string;
  /** The tag as written; '' when the reference has none. */
  readonly tag: string;
  /** The digest as written (`sha256:...`); '' when none. */
  readonly digest: string;
}

/** Why a text is not an image reference (docker's words where it has them). */
export class ImageReferenceError extends Error {
  constructor(
    readonly reference: string,
    reason: string,
  ) {
    super(`invalid image reference ${JSON.stringify(cut(reference))}: ${reason}`);
  }
}

const DOCKER_HUB = 'docker.io';
const LEGACY_DOCKER_HUB = 'index.docker.io';
const OFFICIAL_PREFIX = 'library/';
/** The tag a runtime pulls when a reference has neither tag nor digest. */
export const DEFAULT_TAG = 'latest';
/** Longest name (registry/repository) docker accepts. */
export const MAX_NAME_LENGTH = 255;
// Longer than any valid reference (name 255, tag 128, digest 7 + 128): refused before any pattern runs.
const MAX_REFERENCE_LENGTH = 1024;

// The grammar, as distribution/reference/regexp.go writes it (RE2 syntax; Go's \w is ASCII, as RE2's).
const ALPHANUMERIC = '[a-z0-9]+';
const SEPARATOR = '(?:[._]|__|[-]+)';
const PATH_COMPONENT = `${ALPHANUMERIC}(?:${SEPARATOR}${ALPHANUMERIC})*`;
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN_NAME = `${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*`;
const IPV6 = '\\[(?:[a-fA-F0-9:]+)\\]';
/** A registry: host (name or bracketed IPv6) and optional port. */
export const DOMAIN_PATTERN = `(?:${DOMAIN_NAME}|${IPV6})(?::[0-9]+)?`;
const REMOTE_NAME = `${PATH_COMPONENT}(?:/${PATH_COMPONENT})*`;
const TAG = '[\\w][\\w.-]{0,127}';
const DIGEST = '[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][0-9a-fA-F]{32,}';
const REFERENCE = `^(?:${DOMAIN_PATTERN}/)?${REMOTE_NAME}(?::${TAG})?(?:@${DIGEST})?$`;

const referenceRegex = compileRegex(REFERENCE);
const identifierRegex = compileRegex('^[a-f0-9]{64}$');
const registryRegex = compileRegex(`^${DOMAIN_PATTERN}(?:/${REMOTE_NAME})?$`);

// go-digest's registered algorithms and the length of their lower-case hex encoding.
const DIGEST_LENGTHS: Readonly<Record<string, number>> = { sha256: 64, sha384: 96, sha512: 128 };

/**
 * The references whose parts the native compiler's CEL computes with plain string functions (native/image.ts): valid
 * ones, with a digest go-digest accepts, short enough that the normalised name stays under MAX_NAME_LENGTH. Any other
 * string leaves the object to the webhook (a guard), where parseImageReference decides.
 */
export const CEL_REFERENCE_PATTERN =
  `^(?:${DOMAIN_PATTERN}/)?${REMOTE_NAME}(?::${TAG})?` +
  `(?:@(?:sha256:[a-f0-9]{64}|sha384:[a-f0-9]{96}|sha512:[a-f0-9]{128}))?$`;
/** The longest string CEL_REFERENCE_PATTERN is trusted for (docker.io/library/ added stays under 255). */
export const CEL_REFERENCE_MAX = 200;

/** Parses a reference as ParseNormalizedNamed does; throws ImageReferenceError. */
export function parseImageReference(text: string): ImageReference {
  if (text.length > MAX_REFERENCE_LENGTH) throw new ImageReferenceError(text, 'longer than any reference');
  if (identifierRegex.test(text))
    throw new ImageReferenceError(text, 'a 64-character hexadecimal string is an image ID, not a reference');
  const { registry, remainder } = splitRegistry(text);
  const colon = remainder.indexOf(':');
  const remote = colon >= 0 ? remainder.slice(0, colon) : remainder;
  if (remote.toLowerCase() !== remote)
    throw new ImageReferenceError(text, `repository name ${JSON.stringify(remote)} must be lowercase`);
  const full = `${registry}/${remainder}`;
  if (!referenceRegex.test(full)) throw new ImageReferenceError(text, 'invalid reference format');
  const at = remainder.indexOf('@');
  const named = at >= 0 ? remainder.slice(0, at) : remainder;
  const digest = at >= 0 ? remainder.slice(at + 1) : '';
  const tagAt = named.indexOf(':');
  const repository = tagAt >= 0 ? named.slice(0, tagAt) : named;
  const tag = tagAt >= 0 ? named.slice(tagAt + 1) : '';
  if (registry.length + 1 + repository.length > MAX_NAME_LENGTH)
    throw new ImageReferenceError(
      text,
      `repository name must not be more than ${MAX_NAME_LENGTH} characters`,
    );
  if (digest !== '') checkDigest(text, digest);
  return { registry, repository, tag, digest };
}

/** The parts of `text`, or undefined when it is not a reference. */
export function imageReferenceOf(text: string): ImageReference | undefined {
  try {
    return parseImageReference(text);
  } catch (err) {
    if (err instanceof ImageReferenceError) return undefined;
    throw err;
  }
}

/** The tag a runtime pulls: the one written, `latest` when there is neither tag nor digest, '' for a digest alone. */
export function effectiveTag(ref: ImageReference): string {
  if (ref.tag !== '') return ref.tag;
  return ref.digest === '' ? DEFAULT_TAG : '';
}

/** The reference written out in full: registry/repository[:tag][@digest] (nothing added that was not written). */
export function formatImageReference(ref: ImageReference): string {
  return (
    `${ref.registry}/${ref.repository}` +
    (ref.tag !== '' ? `:${ref.tag}` : '') +
    (ref.digest !== '' ? `@${ref.digest}` : '')
  );
}

/**
 * `image` with its registry replaced by `registry` (a host with optional port and path: `mirror.example.com`,
 * `harbor.example.com/dockerhub-proxy`); repository (with `library/` for Docker Hub's official images), tag and digest
 * kept. Throws ImageReferenceError for an invalid image, or a registry a runtime would not read as one.
 */
export function withRegistry(registry: string, image: string): string {
  const ref = parseImageReference(image);
  const target = registry.endsWith('/') ? registry.slice(0, -1) : registry;
  if (!registryRegex.test(target))
    throw new ImageReferenceError(target, 'not a registry (a host with optional port and path)');
  const host = target.split('/', 1)[0];
  if (!isRegistryComponent(host))
    throw new ImageReferenceError(
      target,
      `${JSON.stringify(host)} would be read as a Docker Hub namespace: a registry has a ".", a ":port" or is localhost`,
    );
  const out = formatImageReference({ ...ref, registry: target });
  parseImageReference(out); // a path prefix can push the name past docker's limit
  return out;
}

/** Whether a reference's first path component is a registry (docker's splitDockerDomain). */
function isRegistryComponent(component: string): boolean {
  return (
    component === 'localhost' ||
    component.includes('.') ||
    component.includes(':') ||
    component.toLowerCase() !== component
  );
}

/** docker's splitDockerDomain: the registry and the rest (repository with tag and digest), Docker Hub normalised. */
function splitRegistry(text: string): { registry: string; remainder: string } {
  const slash = text.indexOf('/');
  if (slash < 0) return { registry: DOCKER_HUB, remainder: OFFICIAL_PREFIX + text };
  const first = text.slice(0, slash);
  let registry = DOCKER_HUB;
  let remainder = text;
  if (first === LEGACY_DOCKER_HUB) remainder = text.slice(slash + 1);
  else if (isRegistryComponent(first)) [registry, remainder] = [first, text.slice(slash + 1)];
  if (registry === DOCKER_HUB && !remainder.includes('/')) remainder = OFFICIAL_PREFIX + remainder;
  return { registry, remainder };
}

function checkDigest(text: string, digest: string): void {
  const [algorithm, encoded] = digest.split(':', 2);
  const length = DIGEST_LENGTHS[algorithm];
  if (length === undefined) throw new ImageReferenceError(text, `unsupported digest algorithm ${algorithm}`);
  if (encoded.length !== length || !/^[a-f0-9]+$/.test(encoded))
    throw new ImageReferenceError(
      text,
      `invalid ${algorithm} digest: ${length} lower-case hexadecimal characters expected`,
    );
}

function cut(text: string): string {
  return text.length > 120 ? `${text.slice(0, 120)}...` : text;
}
