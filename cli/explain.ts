import {
  AdmissionExplanation,
  describeCompare,
  MatchItemExplanation,
  RuleExplanation,
} from '../engine/explain';
import { JsonValue } from '../util/json';

/** ANSI colouring, or none (files, pipes, NO_COLOR). */
export interface Palette {
  red: (s: string) => string;
  green: (s: string) => string;
  yellow: (s: string) => string;
  dim: (s: string) => string;
  bold: (s: string) => string;
}

const plain = (s: string): string => s;
const ansi =
  (code: number) =>
  (s: string): string =>
    `\u001b[${code}m${s}\u001b[0m`;

/** Colours on a terminal only, and never when NO_COLOR is set. */
export function palette(color: boolean): Palette {
  if (!color) return { red: plain, green: plain, yellow: plain, dim: plain, bold: plain };
  return { red: ansi(31), green: ansi(32), yellow: ansi(33), dim: ansi(2), bold: ansi(1) };
}

/** Whether to colour output written to a stream with this TTY state. */
export function wantColor(isTTY: boolean | undefined): boolean {
  return Boolean(isTTY) && !process.env.NO_COLOR;
}

const MAX_VALUE_WIDTH = 100;

/** A value on one line, cut to a readable width. */
export function shortValue(v: JsonValue | undefined): string {
  const text = v === undefined ? '' : JSON.stringify(v);
  return text.length > MAX_VALUE_WIDTH ? `${text.slice(0, MAX_VALUE_WIDTH - 1)}…` : text;
}

function itemLines(item: MatchItemExplanation, firstFailing: boolean, p: Palette): string[] {
  const verdict = item.matched ? p.green('yes') : p.red(firstFailing ? 'NO  <- first failing item' : 'no');
  const flags = `matchFor ${item.matchFor}${item.negate ? ', negate' : ''}`;
  const lines = [
    `    match[${item.index}] ${item.select}`,
    `      compare: ${describeCompare(item.compare)} (${flags})`,
    `      results: ${item.resultCount}${item.error ? ` (select failed: ${item.error})` : ''}`,
  ];
  for (const r of item.results) lines.push(`        ${r.path ?? '(computed)'} = ${shortValue(r.value)}`);
  if (item.resultCount > item.results.length)
    lines.push(p.dim(`        … ${item.resultCount - item.results.length} more`));
  lines.push(`      matched: ${verdict} (${item.reason})`);
  return lines;
}

function ruleLines(rule: RuleExplanation, p: Palette): string[] {
  const head = `  ${p.bold(rule.rule)} [${rule.type}, tier ${rule.tier}${rule.mode ? `, ${rule.mode}` : ''}]`;
  if (rule.status === 'out-of-scope') return [p.dim(`${head}: out of scope: ${rule.reason ?? ''}`)];
  const failing = rule.items.findIndex((i) => !i.matched);
  const status =
    rule.status === 'matched'
      ? p.green('matched')
      : p.red(`not matched (match[${failing < 0 ? '?' : failing}] failed)`);
  const lines = [`${head}: ${status}`];
  if (rule.mode && rule.status === 'matched')
    lines.push(
      p.yellow(
        `    not enforced (${rule.mode}): the object is admitted as it is; below is what enforcing the rule would do`,
      ),
    );
  for (const r of rule.references ?? []) {
    const found =
      typeof r.found === 'number'
        ? r.name === 'owner'
          ? `${r.found} level(s) found`
          : `${r.found} object(s)`
        : r.found
          ? 'found'
          : p.yellow('absent');
    lines.push(`    syntheticRefs.${r.name}: ${r.target}: ${found}`);
  }
  rule.items.forEach((item, i) => lines.push(...itemLines(item, i === failing, p)));
  for (const o of rule.operations ?? [])
    lines.push(`    patch: ${o.op} ${o.path}${o.value === undefined ? '' : ` = ${shortValue(o.value)}`}`);
  if (rule.rejectMessage !== undefined)
    lines.push(`    rejectMessage: ${JSON.stringify(rule.rejectMessage)}`);
  if (rule.error) lines.push(p.red(`    error: ${rule.error} (the rule's changes were dropped)`));
  return lines;
}

/** The explanation as terminal text, under a heading naming the object. */
export function formatExplanation(label: string, e: AdmissionExplanation, p: Palette): string {
  const lines = [`${p.bold(label)} (${e.operation}${e.namespace === null ? ', cluster-scoped' : ''}):`];
  if (e.ignored) lines.push(p.yellow(`  ignored: ${e.ignored}; no rule is evaluated`));
  if (e.rules.length === 0) lines.push('  no ModRules loaded');
  for (const r of e.rules) lines.push(...ruleLines(r, p));
  return lines.join('\n') + '\n';
}
