// What apply, post-render and test do when a ModRule fails at run time on an object (a template error, a patch
// path that is not there): one policy, --on-error, and one summary line instead of a warning per object.
//
// The webhook admits such an object without the failing rule's changes (it must not block the cluster on a rule's
// bug), and says so on the rule's status, an Event and a metric. Offline the reader is a CI job, a pre-commit hook
// or Helm: a warning there scrolls by while the job passes, and the objects go on unpatched. So the default is
// `fail`; `warn` gives the webhook's behaviour, for a rule known to fail on some objects.
import { UsageError } from './io';

/** --on-error: stop (fail, the default) or carry on as the webhook does (warn). */
export type OnError = 'fail' | 'warn';

const POLICIES: readonly OnError[] = ['fail', 'warn'];

/** The option, as parseCommand takes it. */
export const ON_ERROR_OPTION = { 'on-error': { type: 'string', default: 'fail' } } as const;

/** --on-error's line of a --help text, its description starting at `column`. */
export function onErrorHelp(column: number, fail: string, warn: string): string {
  const lines = [`a ModRule failing at run time on an object: fail (default): ${fail};`, `warn: ${warn}`];
  const pad = ' '.repeat(column);
  return `  ${'--on-error fail|warn'.padEnd(column - 2)}${lines.join(`\n${pad}`)}`;
}

/** Reads --on-error; throws UsageError for anything but fail or warn. */
export function parseOnError(value: string): OnError {
  if (!(POLICIES as readonly string[]).includes(value))
    throw new UsageError(`--on-error must be fail or warn, got "${value}"`);
  return value as OnError;
}

/** One rule failing on one object. */
export interface RunTimeFailure {
  /** namespace/name of the ModRule. */
  rule: string;
  /** The object, as messages name it (`Pod default/web`). */
  object: string;
  message: string;
}

const count = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? '' : 's'}`;

/**
 * The one line that stands for every failure of a run: the rules and on how many objects each failed, and the
 * first failure in full. `objects` counts objects, not failures (two rules failing on one object count it once).
 */
export function failureSummary(failures: readonly RunTimeFailure[]): string {
  const perRule = new Map<string, Set<string>>();
  for (const f of failures) {
    const objects = perRule.get(f.rule) ?? new Set<string>();
    objects.add(f.object);
    perRule.set(f.rule, objects);
  }
  const first = failures[0];
  const objects = new Set(failures.map((f) => f.object)).size;
  const rules = [...perRule.keys()].sort();
  const who =
    rules.length === 1
      ? `ModRule ${rules[0]} failed at run time on ${count(objects, 'object')}`
      : `ModRules ${joinAnd(rules.map((r) => `${r} (${count(perRule.get(r)!.size, 'object')})`))} failed at run time`;
  const firstRule = rules.length === 1 ? '' : `${first.rule}: `;
  return `${who}, first on ${first.object}: ${firstRule}${first.message}`;
}

function joinAnd(items: string[]): string {
  return items.length <= 1
    ? items.join('')
    : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

/**
 * The summary as the command prints it on stderr: `modrule NAME: ...; consequence` for fail, `warning: ...;
 * consequence` for warn. Empty when nothing failed.
 */
export function failureLine(
  command: string,
  failures: readonly RunTimeFailure[],
  policy: OnError,
  consequence: Record<OnError, string>,
): string {
  if (failures.length === 0) return '';
  const prefix = policy === 'fail' ? `modrule ${command}: ` : 'warning: ';
  return `${prefix}${failureSummary(failures)}; ${consequence[policy]}\n`;
}
