import { jsonEqual, JsonValue } from '../util/json';
import { createPatch } from '../patch/diff';
import type { CompiledRule } from '../rule/compile';
import { templateReadsOf } from '../native';
import { fixedPath, pointer, RuleFacts, Write } from './facts';
import { sharedKinds } from './overlap';
import { Conflict } from './types';
import { applyWitness, matchesWitness, witnessFor, witnessKinds } from './witness';

// The checks that run rules (on witnesses, conflict/witness.ts): whether a rule is idempotent on its own output,
// and whether a Reject rule rejects what a Patch rule produced. A finding is shown, never guessed: the rule was run.

/** How many rule runs a check may still make. */
export class RunBudget {
  runs = 0;
  skipped = 0;
  constructor(private readonly max: number) {}

  /** Takes `n` runs; false (and counted as skipped) once the budget is spent. */
  take(n: number): boolean {
    if (this.runs + n > this.max) {
      this.skipped++;
      return false;
    }
    this.runs += n;
    return true;
  }
}

/** "Deployment", "Deployment or Pod", "any kind". */
export function kindsText(kinds: ReadonlySet<string> | null): string {
  if (kinds === null) return 'any kind';
  const list = [...kinds].sort();
  return list.length > 3
    ? `${list.slice(0, 3).join(', ')} and ${list.length - 3} more kinds`
    : list.join(' or ');
}

/** The namespace a witness of this rule lives in: its own, or any for a cluster-wide rule. */
function witnessNamespace(rule: CompiledRule, clusterNamespace: string): string {
  return rule.namespace === clusterNamespace ? 'default' : rule.namespace;
}

/** ` (DryRun)`: a rule not enforced yet, whose conflict bites once it is. */
export function modeNote(rule: CompiledRule): string {
  return rule.enforcement === 'Enforce' ? '' : ` (${rule.enforcement})`;
}

/** What running rules showed, by signature (conflict/facts.ts): generated rules are run once for all. */
interface Shown {
  readonly path: string;
  readonly on: string;
}
const MAX_CACHED = 50_000;
const idempotence = new Map<string, Shown | null>();
const rejections = new Map<string, Shown | null>();

function remember(cache: Map<string, Shown | null>, key: string, value: Shown | null): Shown | null {
  if (cache.size >= MAX_CACHED) cache.clear();
  cache.set(key, value);
  return value;
}

/**
 * Whether applying the rule twice may differ from applying it once: only a write that inserts into a list, or whose
 * templated value reads what the rule writes, can; a constant or a value read from elsewhere set at a fixed path,
 * or a remove, cannot.
 */
function mayRepeat(facts: RuleFacts): boolean {
  return facts.rule.patch.some((op, i) => {
    if (facts.writes[i].insert) return true;
    if (op.value.kind !== 'template') return false;
    const reads = templateReadsOf(op.value.template.source);
    if (reads === 'all') return true;
    return reads.some((r) => {
      const read = pointer(r.tokens.map((t) => (typeof t === 'number' ? '*' : t)));
      return facts.writes.some(
        (w) => read === w.path || read.startsWith(`${w.path}/`) || w.path.startsWith(`${read}/`),
      );
    });
  });
}

/**
 * A Patch rule that, applied to its own result, changes the object again (an unguarded append grows it on every
 * update): run on a witness it matches, then on what it made of it.
 */
export function idempotenceConflict(
  facts: RuleFacts,
  clusterNamespace: string,
  budget: RunBudget,
): Conflict | undefined {
  const rule = facts.rule;
  // It reads other objects: not run without them.
  if (rule.references || !mayRepeat(facts)) return undefined;
  const shown = idempotence.has(facts.signature)
    ? idempotence.get(facts.signature)
    : runTwice(facts, clusterNamespace, budget);
  if (!shown) return undefined;
  return {
    kind: 'idempotence',
    rule,
    path: shown.path,
    field: 'spec.patch',
    on: shown.on,
    message:
      `ModRule ${rule.key}${modeNote(rule)} is not idempotent: applied to its own result (a ${shown.on}) it changes ` +
      `${shown.path} again, so the object changes on every update; guard it with a negated criterion that matches ` +
      'once it applied (docs/modrule-reference.md, idempotency)',
  };
}

function runTwice(facts: RuleFacts, clusterNamespace: string, budget: RunBudget): Shown | null | undefined {
  const rule = facts.rule;
  for (const kind of witnessKinds(facts.kinds)) {
    const witness = witnessFor(kind, witnessNamespace(rule, clusterNamespace), [facts]);
    if (!witness) continue;
    if (!budget.take(2)) return undefined; // not known: not remembered
    if (!matchesWitness(rule, witness)) continue;
    const once = applyWitness(rule, witness);
    // Guarded (its own result no longer matches), or it changes nothing: idempotent.
    if (!once || jsonEqual(once, witness) || !matchesWitness(rule, once))
      return remember(idempotence, facts.signature, null);
    const twice = applyWitness(rule, once);
    if (!twice || jsonEqual(twice, once)) return remember(idempotence, facts.signature, null);
    return remember(idempotence, facts.signature, {
      path: createPatch(once, twice)[0]?.path ?? '',
      on: kind,
    });
  }
  return remember(idempotence, facts.signature, null);
}

/**
 * A Reject rule that rejects what a Patch rule produced (Reject rules see the object after every Patch rule): on a
 * witness both can match, the Reject rule does not match before the patch and does after it.
 */
export function rejectAfterPatch(
  patch: RuleFacts,
  reject: RuleFacts,
  write: Write,
  clusterNamespace: string,
  budget: RunBudget,
): Conflict | undefined {
  const path = write.path;
  const p = patch.rule;
  const r = reject.rule;
  if (p.references || r.references) return undefined;
  if (clearedByWrites(patch, reject)) return undefined;
  const key = `${patch.signature}|${reject.signature}|${path}`;
  const shown = rejections.has(key)
    ? rejections.get(key)
    : runPair(patch, reject, key, clusterNamespace, budget);
  if (!shown) return undefined;
  return {
    kind: 'reject-after-patch',
    rule: p,
    other: r,
    path,
    field: `spec.patch[${write.index}]`,
    otherField: 'spec.match',
    on: shown.on,
    message:
      `ModRule ${r.key}${modeNote(r)} rejects what ModRule ${p.key}${modeNote(p)} (tier ${p.tier}) produces: ` +
      `${p.key} writes ${path}, which ${r.key} reads, and a ${shown.on} it patches is then rejected`,
  };
}

/**
 * Whether the Patch rule's constant writes leave one of the Reject rule's criteria false, whatever the object: it
 * sets a field the criterion requires absent or other, or removes one it requires (decided without a run).
 */
function clearedByWrites(patch: RuleFacts, reject: RuleFacts): boolean {
  return reject.rule.match.some((item) => {
    const path = fixedPath(item);
    if (path === undefined) return false;
    const at = pointer(path.split('.'));
    const write = patch.writes.filter((w) => w.path === at).pop();
    if (!write) return false;
    if (write.op === 'remove') return !item.negate;
    const value = write.value === undefined ? undefined : (JSON.parse(write.value) as JsonValue);
    if (value === undefined || (typeof value === 'object' && value !== null)) return false;
    const text = String(value);
    const hit =
      item.matchValue !== undefined
        ? item.matchValue === text
        : item.matchValues !== undefined
          ? item.matchValues.includes(text)
          : item.matchRegex !== undefined
            ? item.matchRegex.test(text)
            : value !== null && value !== false;
    return hit === item.negate;
  });
}

function runPair(
  patch: RuleFacts,
  reject: RuleFacts,
  key: string,
  clusterNamespace: string,
  budget: RunBudget,
): Shown | null | undefined {
  const [p, r] = [patch.rule, reject.rule];
  for (const kind of witnessKinds(sharedKinds(patch, reject))) {
    const witness = witnessFor(kind, witnessNamespace(p, clusterNamespace), [patch, reject]);
    if (!witness) continue;
    if (!budget.take(3)) return undefined;
    if (!matchesWitness(p, witness) || matchesWitness(r, witness)) continue;
    const patched = applyWitness(p, witness);
    if (patched && matchesWitness(r, patched)) return remember(rejections, key, { path: '', on: kind });
  }
  return remember(rejections, key, null);
}
