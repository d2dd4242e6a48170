import { formatFloat, formatValue, GoValue, goTypeName } from './values';

const PRINTABLE = /[\p{L}\p{M}\p{N}\p{P}\p{S} ]/u;

/** strconv.Quote: a double-quoted Go string literal. */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0) as number;
    if (ch === '"' || ch === '\\') out += '\\' + ch;
    else if (cp < 0x80 && cp >= 0x20 && cp !== 0x7f) out += ch;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\x07') out += '\\a';
    else if (ch === '\b') out += '\\b';
    else if (ch === '\f') out += '\\f';
    else if (ch === '\v') out += '\\v';
    else if (cp < 0x20 || cp === 0x7f) out += '\\x' + cp.toString(16).padStart(2, '0');
    else if (PRINTABLE.test(ch)) out += ch;
    else if (cp < 0x10000) out += '\\u' + cp.toString(16).padStart(4, '0');
    else out += '\\U' + cp.toString(16).padStart(8, '0');
  }
  return out + '"';
}

const str = (v: GoValue): string => formatValue(v === undefined ? null : v);

/** fmt.Sprint: spaces between operands when neither side is a string. */
export function sprint(args: readonly GoValue[]): string {
  let out = '';
  for (let i = 0; i < args.length; i++) {
    if (i > 0 && typeof args[i] !== 'string' && typeof args[i - 1] !== 'string') out += ' ';
    out += str(args[i]);
  }
  return out;
}

/** fmt.Sprintln: operands separated by spaces, newline appended. */
export function sprintln(args: readonly GoValue[]): string {
  return args.map(str).join(' ') + '\n';
}

interface Spec {
  minus: boolean;
  plus: boolean;
  sharp: boolean;
  space: boolean;
  zero: boolean;
  width: number | null;
  prec: number | null;
}

function badVerb(verb: string, v: GoValue): string {
  if (v === null || v === undefined) return `%!${verb}(<nil>)`;
  return `%!${verb}(${goTypeName(v)}=${str(v)})`;
}

function pad(s: string, spec: Spec, numeric: boolean): string {
  if (spec.width === null) return s;
  const len = [...s].length;
  if (len >= spec.width) return s;
  const fill = spec.width - len;
  if (spec.minus) return s + ' '.repeat(fill);
  if (spec.zero && numeric) {
    const sign = /^[+\- ]/.test(s) ? s[0] : '';
    return sign + '0'.repeat(fill) + s.slice(sign.length);
  }
  return ' '.repeat(fill) + s;
}

function signed(s: string, spec: Spec): string {
  if (s.startsWith('-')) return s;
  return spec.plus ? '+' + s : spec.space ? ' ' + s : s;
}

function expForm(f: number, prec: number, upper: boolean): string {
  const s = f.toExponential(prec).replace(/e([+-])(\d)$/, 'e$10$2');
  return upper ? s.toUpperCase() : s;
}

function formatOne(verb: string, v: GoValue, spec: Spec): string {
  switch (verb) {
    case 'v':
      return pad(v === undefined || v === null ? '<nil>' : str(v), spec, false);
    case 'T':
      return pad(goTypeName(v), spec, false);
    case 's':
      return formatString(v, spec);
    case 'q':
      return formatQuoted(v, spec);
    case 't':
      return typeof v === 'boolean' ? pad(String(v), spec, false) : badVerb(verb, v);
    case 'd':
    case 'b':
    case 'o':
    case 'c':
      return formatInteger(verb, v, spec);
    case 'x':
    case 'X':
      return formatHex(verb, v, spec);
    case 'f':
    case 'F':
    case 'e':
    case 'E':
    case 'g':
    case 'G':
      return typeof v === 'number'
        ? pad(signed(floatText(verb, v, spec.prec), spec), spec, true)
        : badVerb(verb, v);
    default:
      return badVerb(verb, v);
  }
}

/** %d, %b, %o: an integer in base 10, 2 or 8 (signed, zero-padded); %c: the character of that code point. */
function formatInteger(verb: 'd' | 'b' | 'o' | 'c', v: GoValue, spec: Spec): string {
  if (typeof v !== 'bigint') return badVerb(verb, v);
  switch (verb) {
    case 'd':
      return pad(signed(v.toString(), spec), spec, true);
    case 'b':
      return pad(signed(v.toString(2), spec), spec, true);
    case 'o':
      return pad(signed(v.toString(8), spec), spec, true);
    default:
      return pad(String.fromCodePoint(Number(v)), spec, false);
  }
}

/** %s: strings, and lists and maps as Go prints them; the precision cuts characters. */
function formatString(v: GoValue, spec: Spec): string {
  if (typeof v === 'string' || Array.isArray(v) || (typeof v === 'object' && v !== null)) {
    const s = str(v);
    return pad(spec.prec !== null ? [...s].slice(0, spec.prec).join('') : s, spec, false);
  }
  return badVerb('s', v);
}

/** %q: a string as a Go string literal, an integer as a character literal. */
function formatQuoted(v: GoValue, spec: Spec): string {
  if (typeof v === 'string') return pad(goQuote(v), spec, false);
  if (typeof v === 'bigint') return pad(`'${String.fromCodePoint(Number(v))}'`, spec, false);
  return badVerb('q', v);
}

/** %x and %X: integers in hexadecimal (`#` adds 0x), strings as the hexadecimal of their UTF-8 bytes. */
function formatHex(verb: 'x' | 'X', v: GoValue, spec: Spec): string {
  let s: string;
  if (typeof v === 'bigint')
    s = (v < 0n ? '-' : '') + (spec.sharp ? '0x' : '') + (v < 0n ? -v : v).toString(16);
  else if (typeof v === 'string') s = Buffer.from(v, 'utf8').toString('hex');
  else return badVerb(verb, v);
  return pad(verb === 'X' ? s.toUpperCase() : s, spec, true);
}

/** A float in verb %f, %F, %e, %E, %g or %G at precision `prec`, before sign and padding. */
function floatText(verb: string, v: number, prec: number | null): string {
  if (!Number.isFinite(v)) return formatFloat(v);
  if (verb === 'f' || verb === 'F') return v.toFixed(prec ?? 6);
  if (verb === 'e' || verb === 'E') return expForm(v, prec ?? 6, verb === 'E');
  if (prec === null) return formatFloat(v);
  const p = Math.max(prec, 1);
  const exp = v === 0 ? 0 : Math.floor(Math.log10(Math.abs(Number(v.toPrecision(p)))));
  const s =
    exp < -4 || exp >= p ? expForm(v, p - 1, false).replace(/\.?0+e/, 'e') : String(Number(v.toPrecision(p)));
  return verb === 'G' ? s.toUpperCase() : s;
}

/** fmt.Sprintf with the common verbs, flags, width and precision; Go's %!verb(...) markers for mismatches. */
export function sprintf(format: string, args: readonly GoValue[]): string {
  let out = '';
  let argi = 0;
  let i = 0;
  while (i < format.length) {
    const c = format[i];
    if (c !== '%') {
      const next = format.indexOf('%', i);
      const end = next < 0 ? format.length : next;
      out += format.slice(i, end);
      i = end;
      continue;
    }
    i++;
    if (i >= format.length) {
      out += '%!(NOVERB)';
      break;
    }
    const spec: Spec = {
      minus: false,
      plus: false,
      sharp: false,
      space: false,
      zero: false,
      width: null,
      prec: null,
    };
    for (; i < format.length; i++) {
      const f = format[i];
      if (f === '-') spec.minus = true;
      else if (f === '+') spec.plus = true;
      else if (f === '#') spec.sharp = true;
      else if (f === ' ') spec.space = true;
      else if (f === '0') spec.zero = !spec.minus;
      else break;
    }
    const readNum = (): number | null => {
      if (format[i] === '*') {
        i++;
        const a = args[argi++];
        return typeof a === 'bigint' ? Math.min(Math.abs(Number(a)), 1_000_000) : null;
      }
      const m = /^\d+/.exec(format.slice(i));
      if (!m) return null;
      i += m[0].length;
      return Math.min(Number(m[0]), 1_000_000);
    };
    spec.width = readNum();
    if (format[i] === '.') {
      i++;
      spec.prec = readNum() ?? 0;
    }
    if (i >= format.length) {
      out += '%!(NOVERB)';
      break;
    }
    const verb = String.fromCodePoint(format.codePointAt(i) as number);
    i += verb.length;
    if (verb === '%') {
      out += '%';
      continue;
    }
    if (argi >= args.length) {
      out += `%!${verb}(MISSING)`;
      continue;
    }
    out += formatOne(verb, args[argi++], spec);
  }
  if (argi < args.length) {
    const extra = args
      .slice(argi)
      .map((a) => (a === null || a === undefined ? '<nil>' : `${goTypeName(a)}=${str(a)}`));
    out += `%!(EXTRA ${extra.join(', ')})`;
  }
  return out;
}
