import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { JsonObject, JsonValue, isJsonObject } from '../util/json';
import { emitYamlDocuments } from './emit';

// A tiny `kubectl kustomize` for CI machines without kubectl. It knows exactly the kustomize
// features config/ uses (resources, images, sortOptions fifo) and refuses anything else, so a
// kustomization that grows past it fails loudly instead of building a different bundle.

/** A kustomization this assembler cannot build exactly like kustomize. */
export class KustomizeError extends Error {}

/** One `images:` entry of a kustomization. */
export interface ImageOverride {
  name: string;
  newName?: string;
  newTag?: string;
  digest?: string;
}

const KUSTOMIZATION_FILES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'];
const ALLOWED_KEYS = new Set(['apiVersion', 'kind', 'resources', 'images', 'sortOptions']);

/** Builds `dir` like `kubectl kustomize dir` and returns the YAML stream. */
export function buildKustomization(dir: string): string {
  return emitYamlDocuments(loadKustomization(dir));
}

// Without fifo, kustomize reorders the output by kind ("legacy" order), which this assembler does not do.
function requireFifo(file: string, k: JsonObject): void {
  if (!isJsonObject(k.sortOptions) || k.sortOptions.order !== 'fifo')
    throw new KustomizeError(`${file}: the top-level kustomization needs sortOptions: {order: fifo}`);
}

/** The resources of `dir`'s kustomization, in output order, with its transformations applied. */
export function loadKustomization(dir: string, seen: ReadonlySet<string> = new Set()): JsonObject[] {
  const abs = path.resolve(dir);
  if (seen.has(abs)) throw new KustomizeError(`${dir}: kustomization cycle`);
  const file = KUSTOMIZATION_FILES.map((f) => path.join(abs, f)).find((f) => fs.existsSync(f));
  if (!file) throw new KustomizeError(`${dir}: no kustomization.yaml`);
  const docs = readYamlFile(file);
  if (docs.length !== 1 || !isJsonObject(docs[0])) throw new KustomizeError(`${file}: expected one mapping`);
  const k = docs[0];
  for (const key of Object.keys(k)) {
    if (!ALLOWED_KEYS.has(key))
      throw new KustomizeError(`${file}: "${key}" is not supported by config/build.ts`);
  }
  if (seen.size === 0) requireFifo(file, k);
  else if (k.sortOptions !== undefined)
    throw new KustomizeError(`${file}: sortOptions only at the top level`);

  const inner = new Set(seen).add(abs);
  const resources: JsonObject[] = [];
  for (const entry of stringList(k.resources, file, 'resources')) {
    const target = path.resolve(abs, entry);
    if (!fs.existsSync(target)) throw new KustomizeError(`${file}: resource ${entry} does not exist`);
    if (fs.statSync(target).isDirectory()) resources.push(...loadKustomization(target, inner));
    else resources.push(...readResources(target));
  }
  const images = imageList(k.images, file);
  return resources.map((r) => setImages(r, images) as JsonObject);
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
  if (override.newTag !== undefined) {
    tag = override.newTag;
    digest = undefined;
  }
  if (override.digest !== undefined) {
    digest = override.digest;
    tag = undefined;
  }
  return `${name}${tag !== undefined ? `:${tag}` : ''}${digest !== undefined ? `@${digest}` : ''}`;
}

// `node dist/config/build.js [dir]` prints the bundle, like `kubectl kustomize [dir]` (default config/default).
if (require.main === module) {
  const dir = process.argv[2] ?? 'config/default';
  try {
    process.stdout.write(buildKustomization(dir));
  } catch (err) {
    process.stderr.write(`config/build: ${(err as Error).message}\n`);
    process.exitCode = 1;
  }
}
