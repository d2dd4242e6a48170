import type { CompiledRule } from '../rule/compile';
import type { ArgNode, Node, PipeNode } from '../template/ast';
import type { JsonPathNode } from '../jsonpath';
import { compileSharedTemplate } from '../template';
import { NativeFit } from './compile';
import { overlaps, writeAffects } from './effects';
import type { Pattern } from './patch';
import type { Read } from './select-context';

/*
 * A rule served natively runs before every rule the webhook serves, whatever the tiers, and again after them when the
 * webhook changed the object (reinvocation). It may move only when that cannot change a result: no other Patch rule
 * that may see the same objects writes what it reads or writes, and none that runs before it in tier order reads
 * what it writes. For rules that do not compile, reads are taken from their selects and templates, wholesale where
 * they cannot be pinned down.
 */

/** What a rule reads and writes; `reads: 'all'` when it cannot be narrowed. */
export interface RuleEffects {
  readonly reads: readonly Read[] | 'all';
  readonly writes: readonly Pattern[];
}

const cache = new WeakMap<CompiledRule, RuleEffects>();

/**
 * The effects of a rule: from its compilation when it fits, else read off its selects, paths and templates (a Pod
 * rule's together with its controller variants': one policy serves them all).
 */
export function effectsOf(rule: CompiledRule, fit?: NativeFit): RuleEffects {
  if (fit) return { reads: fit.reads, writes: fit.effects.map((e) => e.writes) };
  let effects = cache.get(rule);
  if (!effects) {
    const members = [rule, ...(rule.variants ?? [])].map(approximate);
    const reads = members.some((m) => m.reads === 'all')
      ? ('all' as const)
      : members.flatMap((m) => m.reads as readonly Read[]);
    cache.set(rule, (effects = { reads, writes: members.flatMap((m) => m.writes) }));
  }
  return effects;
}

function approximate(rule: CompiledRule): RuleEffects {
  const reads: Read[] = [];
  let all = false;
  const read = (ast: JsonPathNode) => {
    if (!pathReads(ast, reads)) all = true;
  };
  for (const item of rule.match) read(item.select.ast);
  const writes: Pattern[] = [];
  for (const op of rule.patch) {
    if (op.select) read(op.select.ast);
    writes.push(
      op.tokens.map((t, i) => {
        if (typeof t !== 'string') return '*';
        if (i === op.tokens.length - 1 && (t === '-' || t === '-1')) return '*';
        return /^(?:0|[1-9]\d*)$/.test(t) ? Number(t) : t;
      }),
    );
    if (
      op.value.kind === 'template' &&
      !templateReads(compileSharedTemplate(op.value.template.source).tree.root, reads)
    )
      all = true;
  }
  if (rule.rejectMessage && !templateReads(compileSharedTemplate(rule.rejectMessage.source).tree.root, reads))
    all = true;
  // A controller variant's templates read the pod its template describes: not the paths they name. Wholesale.
  const templated = rule.rejectMessage || rule.patch.some((op) => op.value.kind === 'template');
  if (rule.podController && templated) all = true;
  return { reads: all ? 'all' : reads, writes };
}

/** Adds the paths a select reads (a path with a wildcard or filter reads everything below its fixed prefix). */
function pathReads(ast: JsonPathNode, out: Read[]): boolean {
  switch (ast.kind) {
    case 'literal':
      return true;
    case 'array':
      return ast.items.every((n) => pathReads(n, out));
    case 'unary':
      return pathReads(ast.operand, out);
    case 'binary':
      return pathReads(ast.left, out) && pathReads(ast.right, out);
    case 'call':
      return ast.args.every((n) => pathReads(n, out));
    case 'path': {
      const tokens: Array<string | number> = [];
      let cut = false;
      for (const s of ast.segments) {
        if (!cut && s.type === 'name') tokens.push(s.name);
        else if (!cut && s.type === 'index' && s.index >= 0) tokens.push(s.index);
        else cut = true; // everything below the fixed prefix counts as read
        // Expressions inside the path can read from $ too.
        const inner =
          s.type === 'filter'
            ? s.predicate
            : s.type === 'key'
              ? s.key
              : s.type === 'script'
                ? s.script
                : null;
        if (inner && !pathReads(inner, out)) return false;
      }
      // Relative to a filter's element: inside what the enclosing path's prefix covers.
      if (ast.root === '@') return true;
      return tokens.length > 0 && push(tokens, out);
    }
  }
}

function push(tokens: Array<string | number>, out: Read[]): boolean {
  if (tokens[0] === 'syntheticRefs') out.push({ root: 'namespace', tokens: tokens.slice(2) });
  else out.push({ root: 'object', tokens });
  return true;
}

/** What a template (its source text) reads of the object: the .Target paths, or 'all' when it cannot be narrowed. */
export function templateReadsOf(source: string): readonly Read[] | 'all' {
  const reads: Read[] = [];
  return templateReads(compileSharedTemplate(source).tree.root, reads) ? reads : 'all';
}

/** Adds the .Target fields a template reads; false when it reads the object as a whole (dot, variables). */
function templateReads(nodes: readonly Node[], out: Read[]): boolean {
  for (const n of nodes) {
    if (n.type === 'text' || n.type === 'break' || n.type === 'continue') continue;
    if (n.type === 'template') {
      if (n.pipe && !pipeReads(n.pipe, out)) return false;
      continue;
    }
    if (!pipeReads(n.pipe, out)) return false;
    if (n.type !== 'action' && (!templateReads(n.list, out) || !templateReads(n.elseList ?? [], out)))
      return false;
  }
  return true;
}

function pipeReads(pipe: PipeNode, out: Read[]): boolean {
  return pipe.cmds.every((c) => c.args.every((a) => argReads(a, out)));
}

function argReads(a: ArgNode, out: Read[]): boolean {
  switch (a.type) {
    case 'field': {
      const [head, ...rest] = a.ident;
      if (head === 'Target') return rest.length > 0 && push(rest, out);
      return head === 'Namespace' || head === 'SelectedItem' || head === 'SelectKeyParts';
    }
    case 'pipe':
      return pipeReads(a, out);
    case 'dot':
    case 'variable':
    case 'chain':
      return false;
    default:
      return true;
  }
}

/** A rule the candidate is checked against. */
export interface OtherRule {
  readonly rule: CompiledRule;
  readonly effects: RuleEffects;
  /** Served natively too (runs in no fixed order with the candidate). */
  readonly native: boolean;
}

/**
 * Why serving `candidate` natively could change what the rules do together; undefined when it cannot. `others`
 * are the other rules held (any namespace: the ones that cannot see the candidate's objects are skipped here).
 */
export function interferenceProblem(
  candidate: NativeFit,
  others: Iterable<OtherRule>,
  clusterNamespace: string,
): string | undefined {
  const n = candidate.rule;
  const mine = effectsOf(n, candidate);
  for (const o of others) {
    const r = o.rule;
    if (r.key === n.key || !maySeeSameObjects(n, r, clusterNamespace)) continue;
    const theirs = o.effects;
    if (n.type === 'Reject') {
      // A Reject rule sees the final object either way, except on DELETE, where Patch rules change the old object.
      if (
        n.operations.has('DELETE') &&
        r.type === 'Patch' &&
        r.operations.has('DELETE') &&
        r.patch.length > 0
      )
        return `ModRule ${r.key} patches objects on DELETE, which the webhook shows this rule and a policy cannot`;
      continue;
    }
    if (r.type !== 'Patch') continue;
    for (const w of theirs.writes) {
      const hit = reads(mine.reads, w) ?? mine.writes.find((x) => overlaps(x, w));
      if (hit !== undefined)
        return `ModRule ${r.key} (tier ${r.tier}) writes ${text(w)}, which this rule reads or writes`;
    }
    // A rule that runs before it in tier order must not see its writes (natively they come first).
    if (o.native || r.tier <= n.tier) {
      for (const w of mine.writes) {
        if (theirs.reads === 'all' || reads(theirs.reads, w) !== undefined)
          return (
            `ModRule ${r.key} (tier ${r.tier}) runs before this rule on the webhook and reads ` +
            `${theirs.reads === 'all' ? 'the whole object' : text(w)}, which this rule writes`
          );
      }
    }
  }
  return undefined;
}

function reads(list: readonly Read[] | 'all', write: Pattern): Read | undefined {
  if (list === 'all') return { root: 'object', tokens: [] };
  return list.find((r) => writeAffects(write, r));
}

function maySeeSameObjects(a: CompiledRule, b: CompiledRule, clusterNamespace: string): boolean {
  return a.namespace === clusterNamespace || b.namespace === clusterNamespace || a.namespace === b.namespace;
}

function text(p: Pattern): string {
  return '$' + p.map((t) => (typeof t === 'number' ? `[${t}]` : t === '*' ? '[*]' : `.${t}`)).join('');
}
