import { Document, isMap, isScalar, isSeq, LineCounter, Pair, YAMLMap } from 'yaml';

// A mapping key given twice. kubectl, the API server and Helm read YAML with go-yaml, which keeps the last value
// silently, and charts do ship such templates; the readers here keep the last value too, and say so.

/** A key that appears more than once in one mapping of a document. */
export interface DuplicateKey {
  /** 1-based position of the document in the stream. */
  document: number;
  /** Where the mapping is, from the document's root: `['metadata', 'labels']`, `['items', 2, 'data']`. */
  path: ReadonlyArray<string | number>;
  key: string;
  /** 1-based line of the occurrence that wins (the last). */
  line: number;
  /** 1-based lines of the occurrences before it, which are ignored. */
  ignored: number[];
}

// Keys as toJS makes object keys of them; YAML 1.1 merge keys (<<) may repeat by design.
function keyOf(pair: Pair): string | null {
  const key = isScalar(pair.key) ? pair.key.value : pair.key;
  if (typeof key === 'symbol') return null; // the merge key, as the parser marks it
  const text = String(key);
  return text === '<<' ? null : text;
}

/**
 * Every key given twice in `doc`, in the mappings that take effect (a shadowed value's own duplicates do not count),
 * in document order (of the occurrence that wins). `lines` must be the LineCounter the document was parsed with.
 */
export function duplicateKeys(doc: Document, document: number, lines: LineCounter): DuplicateKey[] {
  const out: DuplicateKey[] = [];
  const lineOf = (pair: Pair): number => {
    const node = isScalar(pair.key) ? pair.key : null;
    return node?.range ? lines.linePos(node.range[0]).line : 0;
  };
  const visit = (node: unknown, path: Array<string | number>): void => {
    if (isSeq(node)) node.items.forEach((item, i) => visit(item, [...path, i]));
    if (!isMap(node)) return;
    const last = lastPairs(node);
    for (const [key, pairs] of last) {
      if (pairs.length > 1)
        out.push({
          document,
          path,
          key,
          line: lineOf(pairs[pairs.length - 1]),
          ignored: pairs.slice(0, -1).map(lineOf),
        });
      visit(pairs[pairs.length - 1].value, [...path, key]);
    }
  };
  visit(doc.contents, []);
  return out.sort((a, b) => a.line - b.line);
}

/** The pairs of a mapping by key, in order of their last occurrence. */
function lastPairs(map: YAMLMap): Map<string, Pair[]> {
  const byKey = new Map<string, Pair[]>();
  for (const pair of map.items as Pair[]) {
    const key = keyOf(pair);
    if (key === null) continue;
    const pairs = byKey.get(key) ?? [];
    byKey.delete(key);
    byKey.set(key, [...pairs, pair]);
  }
  return byKey;
}

/** Removes from every mapping of `doc` the pairs a later pair with the same key overrides (what the reader ignores). */
export function dropShadowedKeys(doc: Document): void {
  const visit = (node: unknown): void => {
    if (isSeq(node)) node.items.forEach(visit);
    if (!isMap(node)) return;
    const keep = new Set([...lastPairs(node).values()].map((pairs) => pairs[pairs.length - 1]));
    let comments: string[] = [];
    node.items = (node.items as Pair[]).filter((pair) => {
      const key = isScalar(pair.key) ? pair.key : null;
      if (keyOf(pair) !== null && !keep.has(pair)) {
        // A comment above a dropped pair (the document's first lines, say) stays, above the next pair.
        if (key?.commentBefore) comments.push(key.commentBefore);
        return false;
      }
      if (key && comments.length > 0) {
        key.commentBefore = [...comments, key.commentBefore].filter(Boolean).join('\n');
        comments = [];
      }
      return true;
    });
    for (const pair of node.items as Pair[]) visit(pair.value);
  };
  visit(doc.contents);
}

/** `metadata.labels`, `items[2].data`, `(the document)` for the root. */
export function mappingPath(path: ReadonlyArray<string | number>): string {
  if (path.length === 0) return 'the document';
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
}

/** What a reader says of a duplicate key: where, which occurrence wins, and that this is how kubectl reads it. */
export function duplicateKeyMessage(d: DuplicateKey): string {
  const ignored = d.ignored.length === 1 ? `line ${d.ignored[0]} is` : `lines ${d.ignored.join(', ')} are`;
  return (
    `duplicate key "${d.key}" in ${mappingPath(d.path)}: the last one (line ${d.line}) wins, as kubectl and Helm ` +
    `read it; ${ignored} ignored`
  );
}

/**
 * A key given twice in a ModRule or a test suite, as a problem of the field it names: there it is an error
 * (cli/duplicates.ts says why).
 */
export function duplicateKeyProblem(d: DuplicateKey): { field: string; message: string } {
  const field = d.path.length === 0 ? d.key : `${mappingPath(d.path)}.${d.key}`;
  const lines = [...d.ignored, d.line].join(' and ');
  return {
    field,
    message:
      `given more than once (lines ${lines}): kubectl would keep the last one without a word, and the others ` +
      'may be what was meant; write it once',
  };
}
