import { GuardCost, MAX_LIST, MAX_PRINTED } from './guard';

/*
 * Upper bounds of what evaluating the CEL this compiler writes costs the API server, in its units (cel-go's runtime
 * cost: about one unit per identifier, index, call and comparison evaluated; strings cost in proportion to their
 * length, a regex match to the text's length times the pattern's). Only the dragnet's match conditions need them:
 * their budget is shared per request, and running out of it skips the webhook.
 */

/** CEL tokens that may cost a unit each (string literals count as one token). */
export function celTokens(cel: string): number {
  const stripped = cel.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  return (stripped.match(/[A-Za-z_]\w*|\d+(?:\.\d+)?|==|!=|<=|>=|&&|\|\||[!<>+\-*/%?]|\[/g) ?? []).length;
}

/** The bodies of the comprehensions (`.all(v, body)`, `.map(...)`, ...) in a CEL text, outermost only. */
export function comprehensionBodies(cel: string): string[] {
  const bodies: string[] = [];
  const re = /\.(?:all|exists|exists_one|map|filter|transformList)\(/g;
  let m: RegExpExecArray | null;
  let after = 0;
  while ((m = re.exec(cel))) {
    if (m.index < after) continue;
    const open = m.index + m[0].length;
    let depth = 1;
    let i = open;
    for (; i < cel.length && depth > 0; i++) {
      const ch = cel[i];
      if (ch === '"') {
        for (i++; i < cel.length && cel[i] !== '"'; i++) if (cel[i] === '\\') i++;
      } else if (ch === '(') depth++;
      else if (ch === ')') depth--;
    }
    bodies.push(cel.slice(open, i - 1));
    after = i;
  }
  return bodies;
}

/** The longest string literal of a CEL text (the regexes a guard matches with are among them). */
function longestLiteral(cel: string): number {
  return Math.max(0, ...(cel.match(/"(?:[^"\\]|\\.)*"/g) ?? []).map((s) => s.length));
}

/**
 * An upper bound of a guard's cost: its tokens once, every comprehension body once per element of a list of at most
 * MAX_LIST, and for text guards the string work on printed values of at most MAX_PRINTED characters each.
 */
export function guardCelCost(cel: string, cost: GuardCost): number {
  const iterates = cost === 'elements' || cost === 'elements-text';
  const text = cost === 'text' || cost === 'elements-text';
  const perElement = iterates ? comprehensionBodies(cel).reduce((s, b) => s + celTokens(b), 0) : 0;
  let stringWork = 0;
  if (text) {
    const inputs = (cel.match(/\.value\(\)|\.orValue\(/g) ?? []).length + 1;
    const length = inputs * MAX_PRINTED + cel.length;
    const matches = (cel.match(/\.matches\(/g) ?? []).length;
    const built = (cel.match(/ \+ |\.replace\(|\.substring\(|\.join\(/g) ?? []).length;
    stringWork =
      matches * Math.ceil(length / 4) * Math.ceil(longestLiteral(cel) / 4) + built * Math.ceil(length / 10);
  }
  return (
    celTokens(cel) + (iterates ? MAX_LIST * (perElement + 2) : 0) + (iterates ? MAX_LIST : 1) * stringWork
  );
}
