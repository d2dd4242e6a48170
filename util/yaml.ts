import {
  Document,
  isMap,
  isNode,
  isScalar,
  isSeq,
  LineCounter,
  parseAllDocuments,
  stringify,
  Tags,
  YAMLError,
} from 'yaml';
import { TextPosition } from './excerpt';
import { DuplicateKey, duplicateKeys } from './yaml-duplicates';
import { isJsonObject, JsonObject, JsonValue } from './json';
import { messageOf } from './errors';

/** Thrown for YAML that does not parse or has no JSON form; says which document and, for syntax errors, where. */
export class ManifestSyntaxError extends Error {
  constructor(
    message: string,
    /** The parts of the message, for callers that print the file, line and a caret themselves. */
    readonly details: { reason?: string; document?: number; position?: TextPosition } = {},
  ) {
    super(message);
  }

  /** Why, without the document and position. */
  get reason(): string {
    return this.details.reason ?? this.message;
  }
}

// yaml's message says "REASON at line L, column C:" and then draws the place; keep the reason, position apart.
function yamlError(err: YAMLError): { reason: string; position?: TextPosition } {
  const reason = firstLine(err.message).replace(/ at line \d+, column \d+:?$/, '');
  const at = err.linePos?.[0];
  return { reason, ...(at ? { position: { line: at.line, column: at.col } } : {}) };
}

/** A YAML syntax error of document `document` (1-based) as 'document N: line L, column C: reason'. */
export function yamlSyntaxError(err: YAMLError, document: number): ManifestSyntaxError {
  const { reason, position } = yamlError(err);
  const where = position ? `: line ${position.line}, column ${position.column}` : '';
  return new ManifestSyntaxError(`document ${document}${where}: ${reason}`, { reason, document, position });
}

// go-yaml v2's float syntax: a lone '.' (a managedFields key) or '.e5' is a string there, a float in yaml's 1.1 schema.
const GO_YAML_FLOAT = /^[-+]?(?:\.[0-9_]+|[0-9][0-9_]*\.[0-9_]*)$/;
const GO_YAML_FLOAT_EXP = /^[-+]?(?:\.[0-9_]+|[0-9][0-9_]*(?:\.[0-9_]*)?)[eE][-+]?[0-9]+$/;

// kubectl and KubeMod read YAML with go-yaml v2 (sigs.k8s.io/yaml): YAML 1.1, so yes/no/on/off are booleans and
// 0777 is octal, but timestamps and sexagesimal numbers stay strings for untyped values. Read it the same way.
function goYamlTags(tags: Tags): Tags {
  const out: Tags = [];
  for (const t of tags) {
    if (typeof t !== 'object') out.push(t);
    else if (/timestamp$/.test(t.tag) || t.format === 'TIME') continue;
    else if (/float$/.test(t.tag) && t.test && !/inf/.test(String(t.test)))
      out.push({ ...t, test: t.format === 'EXP' ? GO_YAML_FLOAT_EXP : GO_YAML_FLOAT });
    else out.push(t);
  }
  return out;
}

// A key given twice: the last one wins, as go-yaml (kubectl, the API server, Helm, KubeMod) reads it. The readers
// find such keys with duplicateKeys() and warn (manifests) or refuse (ModRules, test suites).
const readOptions = { version: '1.1' as const, customTags: goYamlTags, uniqueKeys: false };

/** The options every manifest is parsed with (YAML 1.1 as go-yaml v2 reads it, the last of repeated keys wins). */
export const MANIFEST_READ_OPTIONS: Readonly<typeof readOptions> = readOptions;

// Input can come from tenants (rule values) or from files: cap alias expansion so a YAML bomb cannot blow up memory.
const MAX_ALIAS_COUNT = 100;

/**
 * Parses multi-document YAML (or JSON) as kubectl would; empty documents are dropped. Keys given twice (the last
 * wins) are added to `duplicates` when given.
 */
export function parseYamlDocuments(text: string, duplicates?: DuplicateKey[]): JsonValue[] {
  return parseYamlEntries(text).map((e) => {
    duplicates?.push(...e.duplicates);
    return e.value;
  });
}

/** One non-empty document of a stream: its value, its 1-based position, the keys it gives twice. */
interface YamlEntry {
  value: JsonValue;
  document: number;
  duplicates: DuplicateKey[];
}

function parseYamlEntries(text: string): YamlEntry[] {
  const out: YamlEntry[] = [];
  const lines = new LineCounter();
  for (const [i, doc] of parseAllDocuments(text, { ...readOptions, lineCounter: lines }).entries()) {
    const where = `document ${i + 1}`;
    if (doc.errors.length > 0) throw yamlSyntaxError(doc.errors[0], i + 1);
    if (doc.contents === null) continue; // an empty document between separators
    out.push({
      value: documentJson(doc, where),
      document: i + 1,
      duplicates: duplicateKeys(doc, i + 1, lines),
    });
  }
  return out;
}

/** A parsed document's JSON value (null when empty); throws ManifestSyntaxError prefixed with `where`. */
export function documentJson(doc: Document, where: string): JsonValue {
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (err) {
    const reason = firstLine(messageOf(err));
    throw new ManifestSyntaxError(`${where}: ${reason}`, { reason });
  }
  // A JSON round trip gives every string its own storage: the parser's strings are slices of the whole file's
  // text, and one kept string (a rule's name) would keep the file alive for as long as the rule lives.
  return JSON.parse(JSON.stringify(toJsonValue(value, ''))) as JsonValue;
}

/** One document of a YAML stream, where it is, and how to find a field's line in it. */
export interface LocatedDocument {
  /** 1-based position in the stream, empty documents counted. */
  index: number;
  /** 1-based line where the document starts. */
  line: number;
  /** The value; undefined when the document is empty or broken. */
  value?: JsonValue;
  /** Why the document does not parse. */
  error?: string;
  /** Where a syntax error is in the whole text (absent for errors found after parsing). */
  errorAt?: TextPosition;
  /** Keys the document gives twice (the last one is in `value`). */
  duplicates: DuplicateKey[];
  /** 1-based line of the deepest existing field along `path` (the document's line when none exists). */
  lineOf(path: ReadonlyArray<string | number>): number;
}

/** Parses multi-document YAML like parseYamlDocuments, but keeps going past broken documents and tracks lines. */
export function parseLocatedDocuments(text: string): LocatedDocument[] {
  const lines = new LineCounter();
  const docs = parseAllDocuments(text, { ...readOptions, lineCounter: lines });
  const lineAt = (offset: number): number => lines.linePos(offset).line;
  return docs.map((doc, i) => {
    const start = doc.contents?.range?.[0] ?? doc.range[0];
    const located: LocatedDocument = {
      index: i + 1,
      line: lineAt(start),
      duplicates: doc.errors.length > 0 ? [] : duplicateKeys(doc, i + 1, lines),
      // The line of the key of the deepest field along the path that exists (a missing field: its parent's).
      lineOf: (path) => {
        let line = located.line;
        let node: unknown = doc.contents;
        for (const key of path) {
          if (isMap(node)) {
            const pair = node.items.find((p) => (isScalar(p.key) ? p.key.value : p.key) === key);
            if (!pair) break;
            const range = isNode(pair.key) ? pair.key.range : undefined;
            if (range) line = lineAt(range[0]);
            node = pair.value;
          } else if (isSeq(node) && typeof key === 'number') {
            const item: unknown = node.items[key];
            if (!isNode(item)) break;
            if (item.range) line = lineAt(item.range[0]);
            node = item;
          } else break;
        }
        return line;
      },
    };
    if (doc.errors.length > 0) {
      const { reason, position } = yamlError(doc.errors[0]);
      return { ...located, error: reason, ...(position ? { errorAt: position } : {}) };
    }
    if (doc.contents === null) return located;
    try {
      return { ...located, value: toJsonValue(doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }), '') };
    } catch (err) {
      return { ...located, error: firstLine(messageOf(err)) };
    }
  });
}

/** Parses Kubernetes manifests: every document must be an object; `kind: *List` documents give their items. */
export function parseManifestObjects(text: string): JsonObject[] {
  return parseManifestEntries(text).map((e) => e.object);
}

/** One object of a manifest stream, and the keys its document gives twice (paths from the object's root). */
export interface ManifestEntry {
  object: JsonObject;
  /** 1-based position of its document in the stream. */
  document: number;
  duplicates: DuplicateKey[];
}

/** parseManifestObjects, with each object's document and duplicate keys (a List's items get theirs). */
export function parseManifestEntries(text: string): ManifestEntry[] {
  const out: ManifestEntry[] = [];
  for (const [i, { value, document, duplicates }] of parseYamlEntries(text).entries()) {
    if (value === null) continue;
    if (!isJsonObject(value))
      throw new ManifestSyntaxError(`document ${i + 1}: not an object (a Kubernetes manifest)`);
    if (typeof value.kind === 'string' && value.kind.endsWith('List') && Array.isArray(value.items)) {
      for (const [j, item] of value.items.entries()) {
        if (!isJsonObject(item))
          throw new ManifestSyntaxError(`document ${i + 1}: items[${j}] is not an object`);
        const own = duplicates.filter((d) => d.path[0] === 'items' && d.path[1] === j);
        out.push({ object: item, document, duplicates: own });
      }
    } else out.push({ object: value, document, duplicates });
  }
  return out;
}

/** Parses exactly one YAML value ('8080' -> 8080, '"8080"' -> "8080", '' -> null, a block -> object). */
export function parseYamlValue(text: string): JsonValue {
  const docs = parseAllDocuments(text, readOptions);
  if (docs.length > 1) throw new ManifestSyntaxError('expected one YAML document, found several');
  if (docs.length === 0) return null;
  const doc = docs[0];
  if (doc.errors.length > 0) throw new ManifestSyntaxError(firstLine(doc.errors[0].message));
  try {
    return toJsonValue(doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }), '');
  } catch (err) {
    if (err instanceof ManifestSyntaxError) throw err;
    throw new ManifestSyntaxError(firstLine(messageOf(err)));
  }
}

/** Writes objects as a `---` separated YAML stream that kubectl reads back to the same values. */
export function stringifyManifests(objects: readonly JsonValue[]): string {
  // version 1.1 quotes strings a YAML 1.1 reader would otherwise take for booleans, numbers or timestamps.
  return objects.map((o) => stringify(o, { version: '1.1', lineWidth: 0 })).join('---\n');
}

function firstLine(s: string): string {
  return s.split('\n')[0];
}

// YAML can express things JSON cannot (NaN, binary, sets); reject them rather than pass on a broken object.
function toJsonValue(v: unknown, where: string): JsonValue {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new ManifestSyntaxError(`value${where} is not a finite number`);
    return v;
  }
  if (typeof v === 'bigint') return Number(v);
  if (Array.isArray(v)) return v.map((x, i) => toJsonValue(x, `${where}[${i}]`));
  if (v instanceof Map) {
    const out: Record<string, JsonValue> = {};
    for (const [k, x] of v) setKey(out, String(k), toJsonValue(x, `${where}.${String(k)}`));
    return out;
  }
  if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    const out: Record<string, JsonValue> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>))
      setKey(out, k, toJsonValue(x, `${where}.${k}`));
    return out;
  }
  throw new ManifestSyntaxError(`value${where} has no JSON representation`);
}

// A key named __proto__ must become an own property, not replace the prototype.
function setKey(o: Record<string, JsonValue>, k: string, v: JsonValue): void {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}
