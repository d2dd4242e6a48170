import type { Node } from '../template/ast';
import { celString } from './cel';
import { Guard } from './guard';
import { ABSENT, celListAt, FieldPath, rootValue, walk } from './path';
import { ELEMENT, SelectContext } from './select-context';
import { boundedInputs, RenderedTemplate } from './template';
import { NoCelForm } from './values';

/*
 * A rendered patch value is parsed as YAML by the engine (rule/value.ts), so `true`, `8080` or `a: b` would not be
 * strings. Compiled here: a plain scalar that can only be the string itself (the engine's own fast path: a letter,
 * then letters, digits, `_./-`, colons only inside, and not a YAML 1.1 keyword), or a "..."/'...' quoted scalar
 * without escapes. A guard checks the rendered text is one of those; other objects go to the webhook.
 */

/** A plain YAML scalar that can only be the string itself (with KEYWORD excluded). */
export const PLAIN = '^[A-Za-z][A-Za-z0-9_./-]*(?::[A-Za-z0-9_./-]+)*$';
/** YAML 1.1's boolean and null words. */
export const KEYWORD = '(?i)^(?:y|yes|n|no|true|false|on|off|null)$';
// Quoted content that needs no unescaping: printable ASCII without the quote (and without backslash in "...").
const DOUBLE_QUOTED = '^[ !#-\\[\\]-~]*$';
const SINGLE_QUOTED = '^[ -&(-~]*$';

/** The CEL string value of a rendered template read as a YAML scalar; adds the guard to ctx. Throws NoCelForm. */
export function yamlScalar(
  rendered: RenderedTemplate,
  root: readonly Node[],
  ctx: SelectContext,
  list: FieldPath | undefined,
): string {
  const quote = quoteOf(root);
  let value: string;
  let check: (s: string) => boolean;
  let celCheck: (s: string) => string;
  if (quote) {
    const text = root.map((n) => (n.type === 'text' ? n.text : '')).join('');
    const inner = text.slice(1, -1);
    if ((quote === '"' && /["\\]/.test(inner)) || (quote === "'" && inner.includes("'")))
      throw new NoCelForm('a quoted value whose text needs unescaping');
    const pattern = quote === '"' ? DOUBLE_QUOTED : SINGLE_QUOTED;
    const re = new RegExp(pattern);
    value = `[${rendered.cel}].map(s, s.substring(1, size(s) - 1))[0]`;
    check = (s) => re.test(s.slice(1, -1));
    celCheck = (s) => `${s}.substring(1, size(${s}) - 1).matches(${celString(pattern)})`;
  } else {
    const text = root.map((n) => (n.type === 'text' ? n.text : '')).join('');
    if (!/^[A-Za-z0-9_./:-]*$/.test(text))
      throw new NoCelForm(
        'a templated value whose text builds YAML structure or spaces (only single string scalars compile)',
      );
    const plain = new RegExp(PLAIN);
    const keyword = /^(?:y|yes|n|no|true|false|on|off|null)$/i;
    value = rendered.cel;
    check = (s) => plain.test(s) && !keyword.test(s);
    celCheck = (s) => `${s}.matches(${celString(PLAIN)}) && !${s}.matches(${celString(KEYWORD)})`;
  }
  // Bounded inputs first: the rendered guard builds and matches text as long as what it prints.
  boundedInputs(rendered, { ctx, list });
  ctx.guards.add(renderedGuard(rendered, check, celCheck, list));
  return value;
}

/** Whether yamlScalar takes the template: its text is one quoted or plain scalar, no structure, no space. */
export function isScalarTemplate(root: readonly Node[]): boolean {
  const text = root.map((n) => (n.type === 'text' ? n.text : '')).join('');
  return quoteOf(root) !== '' || /^[A-Za-z0-9_./:-]*$/.test(text);
}

/** `"` or `'` when the template's text starts and ends with that quote, else ''. */
function quoteOf(root: readonly Node[]): string {
  const first = root[0];
  const last = root[root.length - 1];
  if (first?.type !== 'text' || last?.type !== 'text' || root.length < 2) return '';
  const q = first.text[0];
  return (q === '"' || q === "'") && last.text.endsWith(q) ? q : '';
}

/**
 * The rendered text passes `check`. With a list (the value renders .SelectedItem of an iterating select), it must
 * for every element, selected or not: the guards that make rendering safe are quantified the same way.
 */
function renderedGuard(
  rendered: RenderedTemplate,
  check: (s: string) => boolean,
  celCheck: (s: string) => string,
  list: FieldPath | undefined,
): Guard {
  const what = 'the rendered value is a YAML string the engine reads as itself';
  const cond = `[${rendered.cel}].all(s, ${celCheck('s')})`;
  if (!list) return { cel: cond, holds: (object) => check(rendered.render(object)), what, cost: 'text' };
  return {
    cel: `${celListAt(list)}.all(${ELEMENT}, ${cond})`,
    cost: 'elements-text',
    holds: (object) => {
      const base = rootValue(list.root, object);
      const l = base === ABSENT ? ABSENT : walk(base, list.tokens);
      return !Array.isArray(l) || l.every((el) => check(rendered.render(object, el)));
    },
    what,
  };
}
