import type { CompiledRule } from '../../rule/compile';
import type { ReferenceDecl } from '../../rule/references';
import type { Facet } from '../status/facets';
import type { DeclState } from './named';

/*
 * What a ModRule's ReferenceMissing condition says: one line per reference that is not found or cannot be read. It
 * names objects and kinds, never a value read from one.
 */

export const REFERENCE_MISSING = 'ReferenceMissing';

function target(decl: ReferenceDecl): string {
  const where = decl.namespace ? `${decl.namespace}/` : '';
  return decl.objectName !== undefined
    ? `${decl.kind} ${where}${decl.objectName}`
    : `${decl.kind} in ${decl.namespace || 'the cluster'}`;
}

/** One line per reference of `rule` that is missing or cannot be read. */
export function referenceProblems(
  rule: CompiledRule,
  stateOf: (decl: ReferenceDecl) => DeclState,
  ownerProblems: ReadonlyMap<string, string> | undefined,
): string[] {
  const out: string[] = [];
  for (const decl of rule.references?.named ?? []) {
    const s = stateOf(decl);
    if (s.state === 'absent') out.push(`syntheticRefs.${decl.name}: ${target(decl)} not found`);
    else if (s.state === 'unreadable')
      out.push(`syntheticRefs.${decl.name}: cannot read ${target(decl)}: ${s.why}`);
  }
  for (const why of ownerProblems?.values() ?? []) out.push(`syntheticRefs.owner: ${why}`);
  return out;
}

/**
 * The `references` facet for a rule's problems (none: undefined, the facet is cleared). Its message is
 * `<summary>. <details>`: Ready's message names the summary first.
 */
export function referenceFacet(problems: readonly string[]): Facet | undefined {
  if (problems.length === 0) return undefined;
  const unreadable = problems.some(
    (p) => p.includes(': cannot read ') || p.startsWith('syntheticRefs.owner:'),
  );
  const message =
    problems.length === 1
      ? problems[0]
      : `${problems.length} references are missing or cannot be read. ${problems.join('; ')}`;
  return {
    condition: { type: REFERENCE_MISSING, reason: unreadable ? 'Unreadable' : 'NotFound', message },
  };
}
