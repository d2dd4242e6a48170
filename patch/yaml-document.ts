import { Document, isMap, isNode, isSeq, Node, parseAllDocuments, YAMLMap, YAMLSeq } from 'yaml';
import { jsonEqual, JsonValue } from '../util/json';
import { documentJson, MANIFEST_READ_OPTIONS, stringifyManifests } from '../util/yaml';
import { SourceDocument } from '../util/yaml-stream';
import { dropShadowedKeys } from '../util/yaml-duplicates';
import { createPatch } from './diff';
import { JsonPatchOperation, PatchError } from './operation';
import { parsePointer } from './pointer';

// Applies a JSON patch to a YAML syntax tree instead of to the value, so everything the patch does not touch keeps
// its comments, key order, quoting and flow or block style. Only add, remove and replace (what createPatch makes).

/**
 * The text of `source` changed to hold `value`: the source itself when the value is the same; else the document
 * edited in place (comments, key order and quoting of what did not change are kept). Should the edited text not
 * read back as exactly `value` (a construct the tree edit cannot express, such as an alias), the value is written
 * out afresh under the document's leading `---` and comment lines instead: never a wrong object.
 */
export function rewriteDocument(source: SourceDocument, value: JsonValue): string {
  const ops = createPatch(source.value, value);
  if (ops.length === 0) return source.text;
  try {
    const doc = source.document.clone();
    // A key given twice: the value is the last one's; edit that, and drop the ones it overrides.
    if (source.duplicates.length > 0) dropShadowedKeys(doc);
    applyPatchToDocument(doc, ops);
    const text = doc.toString({ lineWidth: 0 });
    if (readsBackAs(text, value)) return text;
  } catch (err) {
    if (!(err instanceof PatchError)) throw err;
  }
  const head = /^(?:(?:---|#.*|[ \t]*)(?:\n|$))*/.exec(source.text)?.[0] ?? '';
  return `${head}${head === '' || head.endsWith('\n') ? '' : '\n'}${stringifyManifests([value])}`;
}

function readsBackAs(text: string, value: JsonValue): boolean {
  const docs = parseAllDocuments(text, MANIFEST_READ_OPTIONS);
  if (docs.length !== 1 || docs[0].errors.length > 0) return false;
  try {
    return jsonEqual(documentJson(docs[0], ''), value);
  } catch {
    return false;
  }
}

/** Applies `ops` to `doc` in place; throws PatchError when an operation cannot be applied to the tree. */
export function applyPatchToDocument(doc: Document, ops: readonly JsonPatchOperation[]): void {
  for (const [i, op] of ops.entries()) {
    if (op.op !== 'add' && op.op !== 'remove' && op.op !== 'replace')
      throw new PatchError(`${op.op} is not supported on a YAML document`, op.path, i);
    const tokens = parsePointer(op.path);
    if (tokens.length === 0) throw new PatchError('cannot replace the whole document', op.path, i);
    const parent = nodeAt(doc, tokens.slice(0, -1), op.path, i);
    const key = tokens[tokens.length - 1];
    if (op.op === 'remove') remove(parent, key, op.path, i);
    else put(doc, parent, key, op, i);
  }
}

function nodeAt(doc: Document, tokens: readonly string[], path: string, i: number): YAMLMap | YAMLSeq {
  let node: unknown = doc.contents;
  for (const token of tokens) {
    if (isMap(node)) node = node.get(token, true);
    else if (isSeq(node)) node = node.get(indexOf(token, node.items.length - 1, path, i), true);
    else throw new PatchError(`no collection at ${path}`, path, i);
  }
  if (!isMap(node) && !isSeq(node)) throw new PatchError(`no collection at ${path}`, path, i);
  return node;
}

function indexOf(token: string, max: number, path: string, i: number): number {
  const n = /^(0|[1-9][0-9]*)$/.test(token) ? Number(token) : NaN;
  if (!(n <= max)) throw new PatchError(`index ${token} out of range`, path, i);
  return n;
}

function remove(parent: YAMLMap | YAMLSeq, key: string, path: string, i: number): void {
  if (isMap(parent)) {
    if (!parent.delete(key)) throw new PatchError(`no member ${key}`, path, i);
  } else parent.items.splice(indexOf(key, parent.items.length - 1, path, i), 1);
}

/** The operations that put a value: what it is, where (`key` of `parent`, the last token of its path) and what. */
type PutOperation = Extract<JsonPatchOperation, { op: 'add' | 'replace' }>;

function put(
  doc: Document,
  parent: YAMLMap | YAMLSeq,
  key: string,
  operation: PutOperation,
  i: number,
): void {
  const { op, path } = operation;
  const node = doc.createNode(operation.value) as Node;
  // A block collection reads better than `{ a: 1 }` once an empty `{}` gets its first member.
  if (parent.flow && parent.items.length === 0) parent.flow = false;
  if (isMap(parent)) {
    const old = parent.get(key, true);
    if (op === 'replace' && old === undefined) throw new PatchError(`no member ${key}`, path, i);
    parent.set(key, keepComments(old, node));
    return;
  }
  if (op === 'add') {
    const at = key === '-' ? parent.items.length : indexOf(key, parent.items.length, path, i);
    parent.items.splice(at, 0, node);
  } else {
    const at = indexOf(key, parent.items.length - 1, path, i);
    parent.items[at] = keepComments(parent.items[at], node);
  }
}

// The comments around a replaced value stay with its replacement.
function keepComments(old: unknown, node: Node): Node {
  if (!isNode(old)) return node;
  node.commentBefore = old.commentBefore;
  node.spaceBefore = old.spaceBefore;
  node.comment = old.comment;
  return node;
}
