import type { CompiledJsonPath, JsonPathNode } from '../jsonpath';
import type { Segment } from '../jsonpath/ast';
import { compileSharedTemplate, CompiledTemplate } from '../template';
import { Chain, forEachTargetChain, WHOLE } from './template-chains';
import type { CompiledMatchItem, CompiledPatchOperation, OwnerReads } from './compiled';

/*
 * Which rules read syntheticRefs.owner, and how deep: found from the selects and templates that name it
 * ($.syntheticRefs.owner.metadata.labels.team, .Target.syntheticRefs.owner.syntheticRefs.owner.metadata.name,
 * index .Target.syntheticRefs "owner"). The owner chain is looked up only for those rules, and only as many levels as
 * they read. A read of the owner as a whole (toJson, with, range, a wildcard) takes every level and every field.
 * Selects that do not name syntheticRefs ($..image, $.*) and templates that pass .Target whole do not read it.
 */

/** The most owner levels the engine follows (Pod → ReplicaSet → Deployment is two). */
export const MAX_OWNER_LEVELS = 4;

export type { OwnerReads } from './compiled';

export const NO_OWNER_READS: OwnerReads = Object.freeze({ levels: 0, fields: 'metadata' });

const METADATA_FIELDS = new Set(['metadata', 'kind', 'apiVersion']);

/** Accumulates reads: the deepest level, and whether anything beyond metadata was read. */
class Acc {
  levels = 0;
  all = false;
  whole(): void {
    this.levels = MAX_OWNER_LEVELS;
    this.all = true;
  }
  /** A chain of names from the object's root, undefined entries standing for "anything below". */
  chain(tokens: Chain): void {
    if (tokens[0] !== 'syntheticRefs') return;
    let level = 0;
    let i = 1;
    for (;;) {
      const key = tokens[i];
      // syntheticRefs (or an owner's) read whole, or a wildcard where "owner" would be.
      if (key === undefined || key === WHOLE) return this.whole();
      if (key !== 'owner')
        return level === 0 ? undefined : this.at(level, key === 'syntheticRefs' ? WHOLE : key);
      level++;
      const next = tokens[i + 1];
      if (next === 'syntheticRefs') {
        i += 2;
        continue;
      }
      return this.at(level, next ?? WHOLE);
    }
  }
  private at(level: number, field: string | typeof WHOLE): void {
    if (field === WHOLE) return this.whole();
    this.levels = Math.max(this.levels, Math.min(level, MAX_OWNER_LEVELS));
    if (!METADATA_FIELDS.has(field)) this.all = true;
  }
  result(): OwnerReads {
    return this.levels === 0
      ? NO_OWNER_READS
      : { levels: this.levels, fields: this.all ? 'all' : 'metadata' };
  }
}

/** What the selects and templates given read of syntheticRefs.owner. */
export function ownerReads(selects: readonly JsonPathNode[], templates: readonly string[]): OwnerReads {
  const acc = new Acc();
  for (const ast of selects) selectReads(ast, acc);
  for (const source of templates) {
    if (!source.includes('syntheticRefs')) continue;
    forEachTargetChain(compileSharedTemplate(source).tree, (chain) => acc.chain(chain));
  }
  return acc.result();
}

function selectReads(ast: JsonPathNode, acc: Acc): void {
  switch (ast.kind) {
    case 'literal':
      return;
    case 'array':
      return ast.items.forEach((n) => selectReads(n, acc));
    case 'unary':
      return selectReads(ast.operand, acc);
    case 'binary':
      selectReads(ast.left, acc);
      return selectReads(ast.right, acc);
    case 'call':
      return ast.args.forEach((n) => selectReads(n, acc));
    case 'path':
      for (const s of ast.segments) innerReads(s, acc);
      if (ast.root === '$') acc.chain(pathTokens(ast.segments));
  }
}

function innerReads(s: Segment, acc: Acc): void {
  if (s.type === 'filter') selectReads(s.predicate, acc);
  else if (s.type === 'key') selectReads(s.key, acc);
  else if (s.type === 'script') selectReads(s.script, acc);
}

/** The names a path starts with; WHOLE where a step stands for several keys (and then it stops). */
function pathTokens(segments: readonly Segment[]): Array<string | typeof WHOLE> {
  const out: Array<string | typeof WHOLE> = [];
  for (const s of segments) {
    if (s.type === 'name') out.push(s.name);
    else if (s.type === 'union' && s.keys.length === 1 && typeof s.keys[0] === 'string') out.push(s.keys[0]);
    else {
      // `$..x` and `$.*` do not name syntheticRefs: they read it only where a rule names it.
      if (out.length > 0 && s.type !== 'index') out.push(WHOLE);
      return out;
    }
  }
  return out;
}

/** What a compiled rule's selects and templates read of syntheticRefs.owner (quick: most name no syntheticRefs). */
export function ruleOwnerReads(
  match: readonly CompiledMatchItem[],
  patch: readonly CompiledPatchOperation[],
  rejectMessage: CompiledTemplate | undefined,
): OwnerReads {
  const selects: JsonPathNode[] = [];
  const templates: string[] = [];
  const select = (s: CompiledJsonPath | undefined) => {
    if (s?.source.includes('syntheticRefs')) selects.push(s.ast);
  };
  for (const item of match) select(item.select);
  for (const op of patch) {
    select(op.select);
    if (op.value.kind === 'template') templates.push(op.value.template.source);
  }
  if (rejectMessage) templates.push(rejectMessage.source);
  if (selects.length === 0 && !templates.some((t) => t.includes('syntheticRefs'))) return NO_OWNER_READS;
  return ownerReads(selects, templates);
}
