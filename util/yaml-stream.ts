import { Document, LineCounter, parseAllDocuments } from 'yaml';
import { JsonValue } from './json';
import { documentJson, MANIFEST_READ_OPTIONS, yamlSyntaxError } from './yaml';
import { DuplicateKey, duplicateKeys } from './yaml-duplicates';

/** One document of a YAML stream: its exact source text, its syntax tree and its value. */
export interface SourceDocument {
  /** 1-based position in the stream, empty documents counted. */
  index: number;
  /** 1-based line where `text` starts. */
  line: number;
  /**
   * The exact source: the `---` marker, the document, and what follows it up to the next marker (the first
   * document also gets whatever precedes it). Joining every document's text gives back the stream, byte for byte.
   */
  text: string;
  /** The syntax tree (comments included), parsed as manifests are (YAML 1.1 as go-yaml v2 reads it). */
  document: Document;
  /** The value; null for an empty (or comment-only) document. */
  value: JsonValue;
  /** Keys the document gives twice: `value` has the last of each, as kubectl and Helm read it. */
  duplicates: DuplicateKey[];
}

/**
 * Splits a YAML stream into its documents without losing a byte, so a tool can write untouched documents back
 * exactly as they came and edit the others in place. Throws ManifestSyntaxError naming the document and line.
 */
export function splitYamlStream(text: string): SourceDocument[] {
  const lines = new LineCounter();
  const docs = parseAllDocuments(text, {
    ...MANIFEST_READ_OPTIONS,
    keepSourceTokens: false,
    lineCounter: lines,
  });
  if (docs.length === 0) return [];
  // Every document after the first starts with its `---` marker: cut there.
  const starts = docs.map((d, i) => (i === 0 ? 0 : d.range[0]));
  return docs.map((document, i) => {
    const start = starts[i];
    const line = lines.linePos(start).line;
    const where = `document ${i + 1} (line ${line})`;
    // The error's own line and column, not the document's (issue 22).
    if (document.errors.length > 0) throw yamlSyntaxError(document.errors[0], i + 1);
    return {
      index: i + 1,
      line,
      text: text.slice(start, i + 1 < docs.length ? starts[i + 1] : text.length),
      document,
      value: document.contents === null ? null : documentJson(document, where),
      duplicates: duplicateKeys(document, i + 1, lines),
    };
  });
}
