import { JsonValue, isJsonObject } from '../util/json';
import { chooseStyle, isBreak, isPrintable } from './scalar-style';

// Writes YAML the way `kubectl kustomize` does (go-yaml v2's emitter): keys sorted, sequences not
// indented under their key, YAML 1.1 look-alike strings double-quoted, long scalars folded after column 80.

const BEST_WIDTH = 80;
const INDENT = 2;

/** Thrown for values this emitter cannot write exactly as kustomize would. */
export class EmitError extends Error {}

/** Serialises documents the way `kubectl kustomize` prints them, joined by `---`. */
export function emitYamlDocuments(docs: readonly JsonValue[]): string {
  return docs.map((doc) => emitDocument(doc)).join('---\n');
}

/** Serialises one document (always ends with a newline). */
export function emitDocument(doc: JsonValue): string {
  const out = new Writer();
  if (isJsonObject(doc) && Object.keys(doc).length > 0) writeMapping(out, doc, 0, false);
  else if (Array.isArray(doc) && doc.length > 0) writeSequence(out, doc, 0, false);
  else {
    out.put(scalarOrEmpty(doc, out, 0, true));
  }
  out.newline();
  return out.text();
}

class Writer {
  private lines: string[] = [];
  private line = '';

  get column(): number {
    return this.line.length;
  }
  put(s: string): void {
    this.line += s;
  }
  newline(): void {
    this.lines.push(this.line);
    this.line = '';
  }
  /** Breaks the line and pads to `indent`, as go-yaml's write_indent does. */
  indent(indent: number): void {
    this.newline();
    this.line = ' '.repeat(indent);
  }
  text(): string {
    if (this.line !== '') this.newline();
    return this.lines.map((l) => `${l}\n`).join('');
  }
}

// `first` = the caller already wrote the "- " that the first key shares its line with.
function writeMapping(out: Writer, obj: { [key: string]: JsonValue }, indent: number, first: boolean): void {
  const keys = Object.keys(obj).sort(compareKeys);
  keys.forEach((key, i) => {
    if (i > 0 || !first) {
      if (out.column > 0) out.newline();
      out.put(' '.repeat(indent));
    }
    out.put(`${formatKey(key)}:`);
    writeValue(out, obj[key], indent, true);
  });
}

function writeSequence(out: Writer, items: readonly JsonValue[], indent: number, first: boolean): void {
  items.forEach((item, i) => {
    if (i > 0 || !first) {
      if (out.column > 0) out.newline();
      out.put(' '.repeat(indent));
    }
    out.put('-');
    writeValue(out, item, indent, false);
  });
}

// Writes what follows "key:" or "-": nested blocks on the next lines, scalars after a space.
function writeValue(out: Writer, value: JsonValue, indent: number, inMapping: boolean): void {
  if (isJsonObject(value) && Object.keys(value).length > 0) {
    if (inMapping) {
      out.newline();
      writeMapping(out, value, indent + INDENT, false);
    } else {
      out.put(' ');
      writeMapping(out, value, indent + INDENT, true);
    }
    return;
  }
  if (Array.isArray(value) && value.length > 0) {
    if (inMapping) {
      // Sequences under a key are not indented.
      out.newline();
      writeSequence(out, value, indent, false);
    } else {
      out.put(' ');
      writeSequence(out, value, indent + INDENT, true);
    }
    return;
  }
  out.put(' ');
  out.put(scalarOrEmpty(value, out, indent + INDENT, false));
}

function scalarOrEmpty(value: JsonValue, out: Writer, indent: number, simpleKey: boolean): string {
  if (isJsonObject(value)) return '{}';
  if (Array.isArray(value)) return '[]';
  if (value === null) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') return formatNumber(value);
  writeString(out, value, indent, simpleKey);
  return '';
}

function formatNumber(n: number): string {
  if (!Number.isFinite(n)) throw new EmitError(`cannot write number ${n}`);
  if (Number.isInteger(n) && Math.abs(n) < 1e21) return String(n);
  throw new EmitError(`non-integer number ${n}: write it as a string`);
}

function formatKey(key: string): string {
  const out = new Writer();
  writeString(out, key, 0, true);
  return out.text().replace(/\n$/, '');
}

function writeString(out: Writer, s: string, indent: number, simpleKey: boolean): void {
  const style = chooseStyle(s, simpleKey);
  const breaks = !simpleKey;
  switch (style) {
    case 'plain':
      return writePlain(out, s, indent, breaks);
    case 'single':
      return writeSingle(out, s, indent, breaks);
    case 'double':
      return writeDouble(out, s, indent, breaks);
    case 'literal':
      return writeLiteral(out, s, indent);
  }
}

function writePlain(out: Writer, s: string, indent: number, breaks: boolean): void {
  let spaces = false;
  const chars = Array.from(s);
  chars.forEach((c, i) => {
    if (c === ' ') {
      if (breaks && !spaces && out.column > BEST_WIDTH && chars[i + 1] !== ' ') out.indent(indent);
      else out.put(c);
      spaces = true;
    } else {
      out.put(c);
      spaces = false;
    }
  });
}

function writeSingle(out: Writer, s: string, indent: number, breaks: boolean): void {
  out.put("'");
  let spaces = false;
  const chars = Array.from(s);
  chars.forEach((c, i) => {
    if (c === ' ') {
      if (
        breaks &&
        !spaces &&
        out.column > BEST_WIDTH &&
        i !== 0 &&
        i !== chars.length - 1 &&
        chars[i + 1] !== ' '
      )
        out.indent(indent);
      else out.put(c);
      spaces = true;
    } else {
      out.put(c === "'" ? "''" : c);
      spaces = false;
    }
  });
  out.put("'");
}

const ESCAPES: Record<string, string> = {
  '\0': '\\0',
  '\x07': '\\a',
  '\b': '\\b',
  '\t': '\\t',
  '\n': '\\n',
  '\x0b': '\\v',
  '\f': '\\f',
  '\r': '\\r',
  '\x1b': '\\e',
  '"': '\\"',
  '\\': '\\\\',
  '\x85': '\\N',
  '\xa0': '\\_',
  '\u2028': '\\L',
  '\u2029': '\\P',
};

function writeDouble(out: Writer, s: string, indent: number, breaks: boolean): void {
  out.put('"');
  let spaces = false;
  const chars = Array.from(s);
  chars.forEach((c, i) => {
    const code = c.codePointAt(0) ?? 0;
    if (
      !isPrintable(c) ||
      c === '\ufeff' ||
      isBreak(c) ||
      c === '"' ||
      c === '\\' ||
      c === '\x85' ||
      c === '\u2028' ||
      c === '\u2029'
    ) {
      const named = ESCAPES[c];
      if (named) out.put(named);
      else if (code <= 0xff) out.put(`\\x${code.toString(16).toUpperCase().padStart(2, '0')}`);
      else if (code <= 0xffff) out.put(`\\u${code.toString(16).toUpperCase().padStart(4, '0')}`);
      else out.put(`\\U${code.toString(16).toUpperCase().padStart(8, '0')}`);
      spaces = false;
    } else if (c === ' ') {
      if (breaks && !spaces && out.column > BEST_WIDTH && i !== 0 && i !== chars.length - 1) {
        out.indent(indent);
        if (chars[i + 1] === ' ') out.put('\\');
      } else out.put(c);
      spaces = true;
    } else {
      out.put(c);
      spaces = false;
    }
  });
  out.put('"');
}

function writeLiteral(out: Writer, s: string, indent: number): void {
  let hints = '';
  if (s.startsWith(' ') || s.startsWith('\n')) hints += String(INDENT);
  if (!s.endsWith('\n')) hints += '-';
  else if (s.length === 1 || s.endsWith('\n\n')) hints += '+';
  out.put(`|${hints}`);
  const body = s.endsWith('\n') ? s.slice(0, -1) : s;
  for (const line of body.split('\n')) {
    out.newline();
    if (line !== '') out.put(' '.repeat(indent) + line);
  }
}

/** go-yaml v2's key order: letters after non-letters, digit runs compared as numbers. */
export function compareKeys(a: string, b: string): number {
  const ar = Array.from(a);
  const br = Array.from(b);
  const isLetter = (c: string): boolean => /\p{L}/u.test(c);
  const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
  for (let i = 0; i < ar.length && i < br.length; i++) {
    if (ar[i] === br[i]) continue;
    const al = isLetter(ar[i]);
    const bl = isLetter(br[i]);
    if (al && bl) return ar[i] < br[i] ? -1 : 1;
    if (al || bl) return bl ? -1 : 1;
    let an = 0;
    let bn = 0;
    if (ar[i] === '0' || br[i] === '0') {
      for (let j = i - 1; j >= 0 && isDigit(ar[j]); j--) {
        if (ar[j] !== '0') {
          an = 1;
          bn = 1;
          break;
        }
      }
    }
    let ai = i;
    for (; ai < ar.length && isDigit(ar[ai]); ai++) an = an * 10 + Number(ar[ai]);
    let bi = i;
    for (; bi < br.length && isDigit(br[bi]); bi++) bn = bn * 10 + Number(br[bi]);
    if (an !== bn) return an < bn ? -1 : 1;
    if (ai !== bi) return ai < bi ? -1 : 1;
    return ar[i] < br[i] ? -1 : 1;
  }
  return ar.length - br.length;
}
