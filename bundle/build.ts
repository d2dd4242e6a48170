import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { JsonObject, JsonValue, isJsonObject } from '../util/json';
import { emitYamlDocuments } from './emit';
import { ImageOverride, imageOverride } from './image';
import { checkBundle } from './check';
import { messageOf } from '../util/errors';
import { metadataOf } from '../util/meta';

// A tiny `kubectl kustomize` for CI machines without kubectl. It knows exactly the kustomize
// features config/ uses (resources, images, kustomize's default "legacy" order or sortOptions) and
// refuses anything else, so a kustomization that grows past it fails loudly instead of building a
// different bundle.

/** A kustomization this assembler cannot build exactly like kustomize. */
export class KustomizeError extends Error {}

const KUSTOMIZATION_FILES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'];
const ALLOWED_KEYS = new Set(['apiVersion', 'kind', 'resources', 'images', 'sortOptions']);

/** Builds `dir` like `kubectl kustomize dir` and returns the YAML stream. */
export function buildKustomization(dir: string, options: BuildOptions = {}): string {
  return emitYamlDocuments(loadKustomization(dir, options));
}

/** Options of a build beyond what the kustomization says. */
export interface BuildOptions {
  /** Replaces every `images:` entry of this name, at any level (`make bundle IMAGE=...`). */
  image?: ImageOverride;
}

type SortOrder = 'fifo' | 'legacy';

// Without sortOptions kustomize sorts "legacy"; the field itself needs kustomize v5 (kubectl 1.27+), so
// config/ leaves it out and older kubectl can build every overlay.
function sortOrderOf(file: string, k: JsonObject): SortOrder {
  if (k.sortOptions === undefined) return 'legacy';
  const order = isJsonObject(k.sortOptions) ? k.sortOptions.order : undefined;
  if (
    !isJsonObject(k.sortOptions) ||
    Object.keys(k.sortOptions).length !== 1 ||
    (order !== 'fifo' && order !== 'legacy')
  )
    throw new KustomizeError(`${file}: sortOptions must be {order: fifo} or {order: legacy}`);
  return order;
}

/** The resources of `dir`'s kustomization, in output order, with its transformations applied. */
export function loadKustomization(dir: string, options: BuildOptions = {}): JsonObject[] {
  const k = readKustomization(dir, new Set());
  const resources = collect(k, options);
  return sortOrderOf(k.file, k.body) === 'legacy' ? legacySort(resources) : resources;
}

interface Kustomization {
  file: string;
  dir: string;
  body: JsonObject;
  seen: ReadonlySet<string>;
}

function readKustomization(dir: string, seen: ReadonlySet<string>): Kustomization {
  const abs = path.resolve(dir);
  if (seen.has(abs)) throw new KustomizeError(`${dir}: kustomization cycle`);
  const file = KUSTOMIZATION_FILES.map((f) => path.join(abs, f)).find((f) => fs.existsSync(f));
  if (!file) throw new KustomizeError(`${dir}: no kustomization.yaml`);
  const docs = readYamlFile(file);
  if (docs.length !== 1 || !isJsonObject(docs[0])) throw new KustomizeError(`${file}: expected one mapping`);
  const k = docs[0];
  for (const key of Object.keys(k)) {
    if (!ALLOWED_KEYS.has(key))
      throw new KustomizeError(`${file}: "${key}" is not supported by bundle/build.ts`);
  }
  // kustomize ignores sortOptions below the top level: refuse it rather than let it look effective.
  if (seen.size > 0 && k.sortOptions !== undefined)
    throw new KustomizeError(`${file}: sortOptions only at the top level`);
  return { file, dir: abs, body: k, seen };
}

// Resources in fifo order, each level's images applied (inner levels first, as kustomize does).
function collect(k: Kustomization, options: BuildOptions): JsonObject[] {
  const inner = new Set(k.seen).add(k.dir);
  const resources: JsonObject[] = [];
  for (const entry of stringList(k.body.resources, k.file, 'resources')) {
    const target = path.resolve(k.dir, entry);
    if (!fs.existsSync(target)) throw new KustomizeError(`${k.file}: resource ${entry} does not exist`);
    if (fs.statSync(target).isDirectory())
      resources.push(...collect(readKustomization(target, inner), options));
    else resources.push(...readResources(target));
  }
  const override = options.image;
  const images = imageList(k.body.images, k.file).map((i) =>
    override && i.name === override.name ? override : i,
  );
  return resources.map((r) => setImages(r, images) as JsonObject);
}

// kustomize's legacy order (kyaml resid.Gvk): these kinds first and last, in this order; then by group/version/kind,
// then by namespace and name.
const LEGACY_FIRST = [
  'Namespace',
  'ResourceQuota',
  'StorageClass',
  'CustomResourceDefinition',
  'ServiceAccount',
  'PodSecurityPolicy',
  'Role',
  'ClusterRole',
  'RoleBinding',
  'ClusterRoleBinding',
  'ConfigMap',
  'Secret',
  'Endpoints',
  'Service',
  'LimitRange',
  'PriorityClass',
  'PersistentVolume',
  'PersistentVolumeClaim',
  'Deployment',
  'StatefulSet',
  'CronJob',
  'PodDisruptionBudget',
];
const LEGACY_LAST = ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'];

function kindRank(kind: string): number {
  const first = LEGACY_FIRST.indexOf(kind);
  if (first >= 0) return first - LEGACY_FIRST.length;
  const last = LEGACY_LAST.indexOf(kind);
  return last >= 0 ? last + 1 : 0;
}

interface ResId {
  group: string;
  kind: string;
  gvk: string;
  id: string;
}

function resIdOf(r: JsonObject): ResId {
  const apiVersion = String(r.apiVersion);
  const slash = apiVersion.indexOf('/');
  const group = slash >= 0 ? apiVersion.slice(0, slash) : '';
  const version = slash >= 0 ? apiVersion.slice(slash + 1) : apiVersion;
  const kind = String(r.kind);
  const gvk = [group || '~G', version || '~V', kind || '~K'].join('_');
  const meta = metadataOf(r);
  const ns = typeof meta.namespace === 'string' && meta.namespace ? meta.namespace : '~X';
  const name = typeof meta.name === 'string' && meta.name ? meta.name : '~N';
  return { group, kind, gvk, id: `${gvk}|${ns}|${name}` };
}

// Byte order, as Go compares strings (all names here are ASCII).
const byteOrder = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function compareLegacy(a: ResId, b: ResId): number {
  if (a.gvk === b.gvk) return byteOrder(a.id, b.id);
  const rank = kindRank(a.kind) - kindRank(b.kind);
  if (rank !== 0) return rank;
  // kustomize puts the core Namespace before a Namespace kind of another group.
  if (a.kind === 'Namespace' && b.kind === 'Namespace' && (a.group === '' || b.group === ''))
    return byteOrder(b.gvk, a.gvk);
  return byteOrder(a.gvk, b.gvk);
}

/** Sorts resources the way kustomize does without sortOptions ("legacy"). */
export function legacySort(resources: readonly JsonObject[]): JsonObject[] {
  return resources
    .map((r) => ({ r, id: resIdOf(r) }))
    .sort((x, y) => compareLegacy(x.id, y.id))
    .map((x) => x.r);
}

function stringList(value: JsonValue | undefined, file: string, field: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((v): v is string => typeof v === 'string'))
    throw new KustomizeError(`${file}: ${field} must be a list of strings`);
  return value;
}

function imageList(value: JsonValue | undefined, file: string): ImageOverride[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new KustomizeError(`${file}: images must be a list`);
  return value.map((v) => {
    if (!isJsonObject(v) || typeof v.name !== 'string')
      throw new KustomizeError(`${file}: images[] needs a name`);
    const extra = Object.keys(v).filter((key) => !['name', 'newName', 'newTag', 'digest'].includes(key));
    if (extra.length > 0) throw new KustomizeError(`${file}: images[] field ${extra[0]} is not supported`);
    const image: ImageOverride = { name: v.name };
    for (const key of ['newName', 'newTag', 'digest'] as const) {
      const field = v[key];
      if (field === undefined) continue;
      if (typeof field !== 'string') throw new KustomizeError(`${file}: images[].${key} must be a string`);
      image[key] = field;
    }
    return image;
  });
}

function readYamlFile(file: string): JsonValue[] {
  const docs = parseAllDocuments(fs.readFileSync(file, 'utf8'));
  return docs.map((doc) => {
    if (doc.errors.length > 0) throw new KustomizeError(`${file}: ${doc.errors[0].message}`);
    return doc.toJS() as JsonValue;
  });
}

function readResources(file: string): JsonObject[] {
  return readYamlFile(file)
    .filter((doc) => doc !== null)
    .map((doc) => {
      if (!isJsonObject(doc) || typeof doc.kind !== 'string' || typeof doc.apiVersion !== 'string')
        throw new KustomizeError(`${file}: every document must be a Kubernetes object`);
      return doc;
    });
}

const CONTAINER_LISTS = new Set(['containers', 'initContainers', 'ephemeralContainers']);

/** Rewrites every container image whose name matches an override, wherever pod specs appear. */
export function setImages(value: JsonValue, images: readonly ImageOverride[]): JsonValue {
  if (images.length === 0) return value;
  if (Array.isArray(value)) return value.map((v) => setImages(v, images));
  if (!isJsonObject(value)) return value;
  const out: JsonObject = {};
  for (const [key, child] of Object.entries(value)) {
    if (CONTAINER_LISTS.has(key) && Array.isArray(child)) {
      out[key] = child.map((c) =>
        isJsonObject(c) && typeof c.image === 'string' ? { ...c, image: rewriteImage(c.image, images) } : c,
      );
    } else out[key] = setImages(child, images);
  }
  return out;
}

/** Applies the first matching override to an image reference ("name[:tag][@digest]"). */
export function rewriteImage(image: string, images: readonly ImageOverride[]): string {
  const at = image.indexOf('@');
  const withoutDigest = at >= 0 ? image.slice(0, at) : image;
  let digest = at >= 0 ? image.slice(at + 1) : undefined;
  const colon = withoutDigest.lastIndexOf(':');
  const hasTag = colon > withoutDigest.lastIndexOf('/');
  let name = hasTag ? withoutDigest.slice(0, colon) : withoutDigest;
  let tag = hasTag ? withoutDigest.slice(colon + 1) : undefined;
  const override = images.find((i) => i.name === name);
  if (!override) return image;
  if (override.newName !== undefined) name = override.newName;
  // As kustomize's imagetag filter: a new tag or digest replaces both; both given name both.
  if (override.newTag !== undefined || override.digest !== undefined) {
    tag = override.newTag;
    digest = override.digest;
  }
  return `${name}${tag !== undefined ? `:${tag}` : ''}${digest !== undefined ? `@${digest}` : ''}`;
}

/** The name config/manager/deployment.yaml gives the operator image; config/default maps it to the real one. */
export const IMAGE_PLACEHOLDER = 'modrule';

function containerImages(value: JsonValue): string[] {
  if (Array.isArray(value)) return value.flatMap(containerImages);
  if (!isJsonObject(value)) return [];
  return Object.entries(value).flatMap(([key, child]) =>
    CONTAINER_LISTS.has(key) && Array.isArray(child)
      ? child.flatMap((c) => (isJsonObject(c) && typeof c.image === 'string' ? [c.image] : []))
      : containerImages(child),
  );
}

/** The bundle for `dir`: built, checked (bundle/check.ts), as text. Throws KustomizeError or ImageReferenceError. */
export function buildBundle(dir: string, image?: string): string {
  const override = image === undefined ? undefined : imageOverride(IMAGE_PLACEHOLDER, image);
  const resources = loadKustomization(dir, { image: override });
  const problems = checkBundle(resources);
  if (override && !containerImages(resources).includes(rewriteImage(IMAGE_PLACEHOLDER, [override])))
    problems.push(
      `no kustomization under it has an images: entry named "${IMAGE_PLACEHOLDER}" to set to ${image}`,
    );
  if (problems.length > 0) throw new KustomizeError(`${dir}: ${problems.join('; ')}`);
  return emitYamlDocuments(resources);
}

// Written beside the target and renamed over it: a failed build never leaves a truncated bundle.yaml behind.
function writeAtomically(file: string, text: string): void {
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  fs.writeFileSync(temp, text);
  fs.renameSync(temp, file);
}

const USAGE = 'usage: node dist/bundle/build.js [DIR] [--image REF] [--output FILE]';

/**
 * `node dist/bundle/build.js [DIR] [--image REF] [--output FILE]`: the bundle of DIR (default config/default), like
 * `kubectl kustomize DIR`, with the operator image set to REF (`make bundle IMAGE=...`), on stdout or into FILE.
 */
export function main(argv: readonly string[]): number {
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: { image: { type: 'string' }, output: { type: 'string', short: 'o' } },
    });
    if (positionals.length > 1) throw new KustomizeError(`one directory at most\n${USAGE}`);
    const text = buildBundle(positionals[0] ?? 'config/default', values.image);
    if (values.output) writeAtomically(values.output, text);
    else process.stdout.write(text);
    return 0;
  } catch (err) {
    process.stderr.write(`bundle/build: ${messageOf(err)}\n`);
    return 1;
  }
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));
