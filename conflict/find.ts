import { performance } from 'node:perf_hooks';
import type { CompiledRule } from '../rule/compile';
import { DEFAULT_CLUSTER_NAMESPACE } from '../rule/types';
import { compareRules } from '../store/snapshot';
import { factsOf, RuleFacts, Write } from './facts';
import { mayMeet, sharedKinds } from './overlap';
import { idempotenceConflict, kindsText, modeNote, rejectAfterPatch, RunBudget } from './runs';
import { Conflict, ConflictOptions, ConflictStats } from './types';

/*
 * Conflicts between rules, found without comparing every pair: writes are indexed by path (and tier), shapes by
 * path, and Reject rules' reads by the first tokens of the path, so only rules that touch the same path are compared,
 * and only those that can match the same object (conflict/overlap.ts) are reported. Each conflict is reported once,
 * its rules in evaluation order. Pure: no cluster; per-rule facts are computed once per compiled rule.
 */

/** Rules indexed between two yields. */
const STEP = 100;

interface Entry {
  readonly facts: RuleFacts;
  readonly write: Write;
}

/** What a check found, and what it cost. */
export interface ConflictResult {
  conflicts: Conflict[];
  stats: ConflictStats;
}

/** Every conflict among `rules`, and what finding them cost (all at once: the CLI). */
export function findConflicts(rules: readonly CompiledRule[], options: ConflictOptions = {}): ConflictResult {
  const steps = conflictSteps(rules, options);
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
  }
}

/**
 * The check in small steps: it yields after each unit of work (a few rules, one path's writers), so a caller on a
 * busy event loop (the operator, beside the webhook) can pause between them.
 */
export function* conflictSteps(
  rules: readonly CompiledRule[],
  options: ConflictOptions = {},
): Generator<void, ConflictResult> {
  const started = performance.now();
  const clusterNamespace = options.clusterNamespace ?? DEFAULT_CLUSTER_NAMESPACE;
  const ordered = [...rules].sort(compareRules);
  const facts: RuleFacts[] = [];
  for (let i = 0; i < ordered.length; i++) {
    facts.push(factsOf(ordered[i]));
    if (i % 20 === 19) yield;
  }
  const patches = facts.filter((f) => f.rule.type === 'Patch');
  const budget = new RunBudget(options.maxRuns ?? 20_000);
  const found = new Found(clusterNamespace, options.maxPairsPerPath ?? 10_000);
  yield* valueConflicts(patches, found);
  yield* shapeConflicts(patches, found);
  for (const f of patches) {
    const c = idempotenceConflict(f, clusterNamespace, budget);
    if (c) found.add(c);
    yield;
  }
  yield* rejectConflicts(facts, found, budget);
  return {
    conflicts: found.list,
    stats: {
      rules: rules.length,
      pairs: found.pairs,
      runs: budget.runs,
      skipped: budget.skipped + found.truncated,
      ms: performance.now() - started,
    },
  };
}

/** The conflicts found so far, once each, and the pairs compared. */
class Found {
  readonly list: Conflict[] = [];
  private readonly seen = new Set<string>();
  pairs = 0;
  truncated = 0;

  constructor(
    readonly clusterNamespace: string,
    readonly maxPairsPerPath: number,
  ) {}

  /** Whether two rules may meet (and the pair is counted). */
  meet(a: CompiledRule, b: CompiledRule): boolean {
    this.pairs++;
    return a !== b && a.key !== b.key && mayMeet(a, b, this.clusterNamespace);
  }

  /** Whether this pair of rules already has a conflict of this kind (on any path). */
  has(kind: Conflict['kind'], a: CompiledRule, b?: CompiledRule): boolean {
    return this.seen.has(`${kind}|${a.key}|${b?.key ?? ''}`);
  }

  add(c: Conflict): void {
    const key = `${c.kind}|${c.rule.key}|${c.other?.key ?? ''}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.list.push(c);
  }
}

/** Adds `value` to the list at `key`. */
function push<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/**
 * The pairs of one path's entries that may meet: entries of one namespace among themselves and with the cluster
 * namespace's, and the cluster namespace's among themselves; never two namespaces' rules (they cannot meet).
 * `differ` leaves out pairs that agree; at most `found.maxPairsPerPath` pairs.
 */
function* pairsOf<T extends { facts: RuleFacts }>(
  list: readonly T[],
  found: Found,
  differ: (a: T, b: T) => boolean,
): Generator<[T, T]> {
  const byNamespace = new Map<string, T[]>();
  for (const e of list) push(byNamespace, e.facts.rule.namespace, e);
  const cluster = byNamespace.get(found.clusterNamespace) ?? [];
  let budget = found.maxPairsPerPath;
  for (const [namespace, own] of byNamespace) {
    const others = namespace === found.clusterNamespace ? [] : cluster;
    for (let i = 0; i < own.length; i++)
      for (let j = i + 1; j < own.length + others.length; j++) {
        const a = own[i];
        const b = j < own.length ? own[j] : others[j - own.length];
        if (!differ(a, b)) continue;
        if (budget-- <= 0) {
          found.truncated++;
          return;
        }
        // In the order the rules run: the first one is named first.
        yield compareRules(a.facts.rule, b.facts.rule) <= 0 ? [a, b] : [b, a];
      }
  }
}

/** Something a Patch rule says about a path: what it writes there (`variant`), at which operation. */
interface Said {
  readonly facts: RuleFacts;
  readonly path: string;
  readonly variant: string;
  readonly index: number;
}

/**
 * Groups what the rules say by `keyOf`, and for each group where two say different things, reports each pair of
 * rules that may meet once (conflict `kind`, `describe` builds it): the shared part of value and shape conflicts.
 */
function* differences(
  patches: readonly RuleFacts[],
  found: Found,
  kind: 'value' | 'shape',
  said: (facts: RuleFacts) => Iterable<Said & { key: string }>,
  describe: (a: Said, b: Said, on: string) => string,
): Generator<void> {
  const byKey = new Map<string, Said[]>();
  for (let i = 0; i < patches.length; i++) {
    for (const s of said(patches[i])) push(byKey, s.key, s);
    if (i % STEP === STEP - 1) yield;
  }
  for (const list of byKey.values()) {
    if (list.length < 2 || !list.some((e) => e.variant !== list[0].variant)) continue;
    yield;
    for (const [a, b] of pairsOf(list, found, (x, y) => x.variant !== y.variant)) {
      const [x, y] = [a.facts.rule, b.facts.rule];
      if (found.has(kind, x, y) || !found.meet(x, y)) continue;
      const on = kindsText(sharedKinds(a.facts, b.facts));
      const [field, otherField] = [`spec.patch[${a.index}]`, `spec.patch[${b.index}]`];
      found.add({
        kind,
        rule: x,
        other: y,
        path: a.path,
        field,
        otherField,
        on,
        message: describe(a, b, on),
      });
    }
  }
}

/**
 * Two rules of one tier writing different constant values (or one removing) at the same path. Templated values and
 * writes into list elements chosen by a filter are left out: what they write depends on the object.
 */
function valueConflicts(patches: readonly RuleFacts[], found: Found): Generator<void> {
  const text = (v: string) =>
    v === 'remove' ? 'removes it' : `sets ${v.length > 60 ? `${v.slice(0, 57)}...` : v}`;
  return differences(
    patches,
    found,
    'value',
    (facts) =>
      facts.writes
        .filter((w) => !w.insert && !w.filtered && (w.op === 'remove' || w.value !== undefined))
        .map((w) => ({
          facts,
          key: `${facts.rule.tier}\u0000${w.path}`,
          path: w.path,
          variant: w.op === 'remove' ? 'remove' : (w.value ?? ''),
          index: w.index,
        })),
    (a, b, on) => {
      const [x, y] = [a.facts.rule, b.facts.rule];
      return (
        `ModRules ${x.key}${modeNote(x)} and ${y.key}${modeNote(y)} (tier ${x.tier}) both write ${a.path} on ` +
        `${on}: ${x.key} ${text(a.variant)}, ${y.key} ${text(b.variant)}; both run, in name order, so ${y.key} ` +
        'wins. Give one a higher executionTier to say which should'
      );
    },
  );
}

const SHAPE_WORDS: Record<string, string> = { list: 'a list', object: 'an object', scalar: 'a scalar value' };

/** A path written as a list by one rule and as an object (or a scalar) by another, in any tier. */
function shapeConflicts(patches: readonly RuleFacts[], found: Found): Generator<void> {
  return differences(
    patches,
    found,
    'shape',
    (facts) =>
      facts.shapes.map((f) => ({ facts, key: f.path, path: f.path, variant: f.shape, index: f.index })),
    (a, b, on) => {
      const [x, y] = [a.facts.rule, b.facts.rule];
      return (
        `ModRules ${x.key}${modeNote(x)} and ${y.key}${modeNote(y)} disagree on what ${a.path} is on ${on}: ` +
        `${x.key} writes it as ${SHAPE_WORDS[a.variant]}, ${y.key} as ${SHAPE_WORDS[b.variant]}; whichever runs ` +
        'second fails or replaces what the first wrote'
      );
    },
  );
}

/** The first two tokens of a path: where Reject rules' reads meet Patch rules' writes. */
function head(path: string): string {
  const third = path.indexOf('/', path.indexOf('/', 1) + 1);
  return (third < 0 ? path : path.slice(0, third)).slice(1);
}

/** Patch rules' writes by namespace, then by the first two tokens of the path. */
type WriteIndex = Map<string, Map<string, Entry[]>>;

function addWrites(index: WriteIndex, facts: readonly RuleFacts[]): void {
  for (const f of facts) {
    if (f.rule.type !== 'Patch') continue;
    let byHead = index.get(f.rule.namespace);
    if (!byHead) index.set(f.rule.namespace, (byHead = new Map()));
    for (const write of f.writes) push(byHead, write.head, { facts: f, write });
  }
}

/** The writes a read may see: under its first two tokens, and those of a shorter path (one token) above it. */
function* writesFor(byHead: ReadonlyMap<string, Entry[]>, read: string): Generator<Entry> {
  const key = head(read);
  yield* byHead.get(key) ?? [];
  const first = key.split('/')[0];
  if (first !== key) yield* byHead.get(first) ?? [];
  else for (const [k, list] of byHead) if (k.startsWith(`${first}/`)) yield* list;
}

/**
 * A Reject rule rejecting what a Patch rule produced: candidates are the Patch rules that may see its objects (its
 * namespace's and the cluster namespace's; for a cluster rule, those of the namespaces it targets) writing a path
 * its criteria read (one above or below the other), each then run on a witness (conflict/runs.ts).
 */
function* rejectConflicts(facts: readonly RuleFacts[], found: Found, budget: RunBudget): Generator<void> {
  const index: WriteIndex = new Map();
  for (let i = 0; i < facts.length; i += STEP) {
    addWrites(index, facts.slice(i, i + STEP));
    yield;
  }
  const onPath = (a: string, b: string) => a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);
  for (const reject of facts) {
    if (reject.rule.type !== 'Reject' || reject.reads === 'all') continue;
    yield;
    const tried = new Set<CompiledRule>();
    for (const byHead of spacesOf(reject.rule, index, found.clusterNamespace))
      for (const read of reject.reads)
        for (const { facts: patch, write } of writesFor(byHead, read)) {
          if (tried.has(patch.rule) || !onPath(read, write.path)) continue;
          tried.add(patch.rule);
          if (!found.meet(patch.rule, reject.rule)) continue;
          const c = rejectAfterPatch(patch, reject, write, found.clusterNamespace, budget);
          if (c) found.add(c);
        }
  }
}

/** The namespaces whose Patch rules may see a rule's objects. */
function spacesOf(
  rule: CompiledRule,
  index: WriteIndex,
  clusterNamespace: string,
): Array<Map<string, Entry[]>> {
  const own = index.get(rule.namespace);
  if (rule.namespace !== clusterNamespace) {
    const cluster = index.get(clusterNamespace);
    return [own, cluster].filter((m) => m !== undefined);
  }
  const regex = rule.targetNamespaceRegex;
  const targets = (ns: string) =>
    regex ? ns === '' || regex.test(ns) : rule.targetNamespaceSelector !== undefined;
  return [...index].filter(([ns]) => ns === clusterNamespace || targets(ns)).map(([, m]) => m);
}
