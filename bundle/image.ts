// Container image references as the OCI distribution spec (and Docker, containerd, the kubelet) parse them:
// [domain[:port]/]path[:tag][@digest]. A bad reference is caught when the bundle or the image is built, not when a
// kubelet fails to pull it.

/** A container image reference that is not valid, with the reason. */
export class ImageReferenceError extends Error {}

/** One `images:` entry of a kustomization. */
export interface ImageOverride {
  name: string;
  newName?: string;
  newTag?: string;
  digest?: string;
}

/** A parsed image reference. */
export interface ImageReference {
  /** Registry host[:port], when the reference names one. */
  domain?: string;
  /** Repository path below the domain, e.g. `modrule/modrule`. */
  path: string;
  tag?: string;
  digest?: string;
}

const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const DOMAIN_COMPONENT = /^(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/;
const NAME_MAX = 255;

function invalid(ref: string, why: string): ImageReferenceError {
  return new ImageReferenceError(`${JSON.stringify(ref)} is not a valid image reference: ${why}`);
}

// host[:port], host being a DNS name, an IPv4 address or a bracketed IPv6 address.
function validDomain(domain: string): boolean {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^:]+)(?::(\d+))?$/.exec(domain);
  if (!m) return false;
  if (m[2] !== undefined && Number(m[2]) > 65535) return false;
  return m[1].startsWith('[') || m[1].split('.').every((c) => DOMAIN_COMPONENT.test(c));
}

/** Parses `ref`; throws ImageReferenceError saying which part is wrong. */
export function parseImageReference(ref: string): ImageReference {
  if (ref === '') throw invalid(ref, 'it is empty');
  if (/\s/.test(ref)) throw invalid(ref, 'it contains white space');
  let rest = ref;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest))
      throw invalid(ref, `the digest "${digest}" is not ALGORITHM:HEX (e.g. sha256: and 64 hex digits)`);
    if (digest.startsWith('sha256:') && !/^sha256:[a-f0-9]{64}$/.test(digest))
      throw invalid(ref, 'a sha256 digest is exactly 64 lower-case hex digits');
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag))
      throw invalid(
        ref,
        `the tag "${tag}" must be 1-128 letters, digits, "_", "." or "-", not starting with "." or "-"`,
      );
  }
  if (rest === '') throw invalid(ref, 'it names no repository');
  if (rest.length > NAME_MAX) throw invalid(ref, `the name is longer than ${NAME_MAX} characters`);
  const parts = rest.split('/');
  let domain: string | undefined;
  // As Docker: the first part is a registry when it has a dot or a port, or is localhost.
  if (parts.length > 1 && (/[.:]/.test(parts[0]) || parts[0] === 'localhost')) {
    domain = parts.shift();
    if (!validDomain(domain!)) throw invalid(ref, `the registry "${domain}" is not HOST or HOST:PORT`);
  }
  const path = parts.join('/');
  for (const part of parts) {
    if (part === '') throw invalid(ref, `the repository "${path}" has an empty path component`);
    if (!PATH_COMPONENT.test(part)) {
      const why = PATH_COMPONENT.test(part.toLowerCase())
        ? 'must be lower case'
        : 'may only hold lower-case letters and digits, separated by ".", "_", "__" or "-"';
      throw invalid(ref, `the repository "${path}" ${why}`);
    }
  }
  return { domain, path, tag, digest };
}

/** The repository name, `domain/path` or `path`. */
export function repositoryOf(ref: ImageReference): string {
  return ref.domain ? `${ref.domain}/${ref.path}` : ref.path;
}

/**
 * Parses an image for a Deployment: valid, and naming a tag or a digest. Without either the kubelet pulls `:latest`,
 * and with imagePullPolicy IfNotPresent each node keeps whichever `:latest` it pulled first.
 */
export function parsePinnedImage(ref: string): ImageReference {
  const parsed = parseImageReference(ref);
  if (parsed.tag === undefined && parsed.digest === undefined)
    throw invalid(
      ref,
      'name a tag or a digest (":1.2.3" or "@sha256:..."): an untagged image runs whatever :latest each node pulled',
    );
  return parsed;
}

/** The kustomize `images:` entry that sets placeholder `name` to `ref`. */
export function imageOverride(name: string, ref: string): ImageOverride {
  const parsed = parsePinnedImage(ref);
  const override: ImageOverride = { name, newName: repositoryOf(parsed) };
  if (parsed.tag !== undefined) override.newTag = parsed.tag;
  if (parsed.digest !== undefined) override.digest = parsed.digest;
  return override;
}
