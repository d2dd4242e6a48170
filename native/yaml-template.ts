import { isJsonObject, JsonObject, JsonValue } from '../util/json';
import type { Node } from '../template/ast';
import { parseModRuleValue } from '../rule/value';
import { celString, celValue } from './cel';
import { Guard } from './guard';
import { SelectContext } from './select-context';
import { boundedInputs, compileTemplateBody, RenderedTemplate } from './template';
import { NoCelForm } from './values';
import { KEYWORD, PLAIN } from './yaml';

/*
 * A patch value whose template text is YAML with values printed into it (KubeMod's sidecar example: a container
 * whose args name the Deployment and namespace). The engine renders the text, then parses it. Compiled here: the
 * text is parsed once with a placeholder for each action, and the CEL builds the same structure with the printed
 * values in place. That is exact only while what is printed cannot change how the text parses, so guards check:
 * every printed value is inert (letters, digits, '.', '_', '-': no indicator, space, quote or newline), and a scalar
 * whose own text does not already make YAML read it as a string (a printed value alone, `port: 80{{ .x }}`) reads
 * as a plain string (as a templated single-scalar value must). Objects for which they do not hold go to the webhook.
 */

/** What a printed value may hold: nothing that can change how YAML parses the text around it. */
const INERT = '^[A-Za-z0-9._-]*$';
/** A character outside every non-string YAML 1.1 scalar form (numbers, booleans, null, timestamps, `<<`, `=`). */
const STRING_FORCING = /[^0-9A-Za-z+\-._:~<=\s]/;

const hole = (i: number) => `zzmodrulehole${i}zz`;
const HOLE = /zzmodrulehole(\d+)zz/;

/** A templated value whose text is YAML structure: its CEL, the constant shape (holes as placeholders). */
export function yamlTemplate(root: readonly Node[], ctx: SelectContext): { cel: string; shape: JsonValue } {
  const actions: RenderedTemplate[] = [];
  let text = '';
  for (const node of root) {
    if (node.type === 'text') text += node.text;
    else {
      actions.push(compileTemplateBody([node], { ctx }));
      text += hole(actions.length - 1);
    }
  }
  if (/(^|\n)zzmodrulehole/.test(text))
    throw new NoCelForm(
      'a value printed at the start of a line of YAML (it could start a document or a block)',
    );
  let shape: JsonValue;
  try {
    shape = parseModRuleValue(text);
  } catch {
    throw new NoCelForm('the template text is not YAML once its values are printed');
  }
  const seen = new Set<number>();
  const cel = celOf(shape, actions, seen, ctx);
  if (seen.size !== actions.length)
    throw new NoCelForm('a template value printed outside a YAML scalar (a key or a comment)');
  for (const action of actions) {
    boundedInputs(action, { ctx });
    ctx.guards.add(inertGuard(action));
  }
  return { cel, shape };
}

function celOf(
  v: JsonValue,
  actions: readonly RenderedTemplate[],
  seen: Set<number>,
  ctx: SelectContext,
): string {
  if (typeof v === 'string') return HOLE.test(v) ? scalarCel(v, actions, seen, ctx) : celValue(v);
  if (Array.isArray(v)) return `[${v.map((x) => `dyn(${celOf(x, actions, seen, ctx)})`).join(', ')}]`;
  if (isJsonObject(v)) {
    const entries = Object.keys(v).map((k) => {
      if (HOLE.test(k)) throw new NoCelForm('a template value printed into a YAML key');
      return `${celString(k)}: dyn(${celOf(v[k], actions, seen, ctx)})`;
    });
    return `{${entries.join(', ')}}`;
  }
  return celValue(v);
}

/** A string scalar with printed values in it: their concatenation, guarded to read as that string. */
function scalarCel(
  s: string,
  actions: readonly RenderedTemplate[],
  seen: Set<number>,
  ctx: SelectContext,
): string {
  const parts: Array<string | RenderedTemplate> = [];
  let last = 0;
  for (const m of s.matchAll(new RegExp(HOLE.source, 'g'))) {
    if (m.index! > last) parts.push(s.slice(last, m.index));
    const i = Number(m[1]);
    seen.add(i);
    parts.push(actions[i]);
    last = m.index! + m[0].length;
  }
  if (last < s.length) parts.push(s.slice(last));
  const cel = parts.map((p) => (typeof p === 'string' ? celString(p) : `(${p.cel})`)).join(' + ');
  const fixed = parts.filter((p): p is string => typeof p === 'string').join('');
  if (!STRING_FORCING.test(fixed)) {
    // Its type depends on what is printed: only a plain string scalar is certain, and this text can never be one.
    if (!/^[A-Za-z0-9_./:-]*$/.test(fixed))
      throw new NoCelForm(
        'a templated value whose text builds YAML structure or spaces, with a scalar whose type depends on ' +
          'what is printed',
      );
    ctx.guards.add(plainGuard(cel, parts));
  }
  return cel;
}

function render(parts: ReadonlyArray<string | RenderedTemplate>, object: JsonObject): string {
  return parts.map((p) => (typeof p === 'string' ? p : p.render(object))).join('');
}

function inertGuard(action: RenderedTemplate): Guard {
  const re = new RegExp(INERT);
  return {
    cel: `[${action.cel}].all(s, s.matches(${celString(INERT)}))`,
    holds: (object) => re.test(action.render(object)),
    what: 'values printed into YAML are letters, digits, ".", "_" or "-"',
    cost: 'text',
  };
}

function plainGuard(cel: string, parts: ReadonlyArray<string | RenderedTemplate>): Guard {
  const plain = new RegExp(PLAIN);
  const keyword = /^(?:y|yes|n|no|true|false|on|off|null)$/i;
  return {
    cel: `[${cel}].all(s, s.matches(${celString(PLAIN)}) && !s.matches(${celString(KEYWORD)}))`,
    holds: (object) => {
      const s = render(parts, object);
      return plain.test(s) && !keyword.test(s);
    },
    what: 'a YAML scalar with printed values reads as a string',
    cost: 'text',
  };
}
