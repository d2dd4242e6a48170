import { CompiledTemplate } from '../template';
import { isJsonObject } from '../util/json';
import { Interner } from '../util/interner';
import { ModRule, MODRULE_API_VERSION, MODRULE_KIND } from './types';
import type { ValidationProblem } from './problems';
import { CompiledLabelSelector, compileLabelSelector } from './labelselector';
import {
  CompiledMatchItem,
  CompiledPatchOperation,
  CompiledRule,
  CompileOptions,
  InvalidModRuleError,
  RuleReferences,
} from './compiled';
import { compileReferences, DEFAULT_REFERENCE_POLICY, isSecretKind, ReferenceDecl } from './references';
import { ruleOwnerReads } from './reads';
import { describe, Report, unknownField } from './field-checks';
import { matchOf, namespaceRegexOf, operationsOf, patchOf, rejectMessageOf, tierOf } from './compile-fields';
import { internedRule } from './interned-rule';

/*
 * Compiling a ModRule checks every field and builds what the engine runs in one pass (analyzeModRule). The parts:
 * compiled.ts (the compiled types), field-checks.ts (field-level checks and messages), compile-match.ts
 * (spec.match items), compile-patch.ts (spec.patch operations), interned-rule.ts (rule objects over shared bodies).
 */
export type {
  CompiledMatchItem,
  CompiledPatchOperation,
  CompiledRule,
  CompiledValue,
  CompileOptions,
  PathToken,
  RuleReferences,
} from './compiled';
export { InvalidModRuleError } from './compiled';
export { placeholderCapacity, preprocessValueTemplate } from './compile-patch';

const SPEC_FIELDS = new Set([
  'type',
  'admissionOperations',
  'executionTier',
  'match',
  'patch',
  'rejectMessage',
  'targetNamespaceRegex',
  'targetNamespaceSelector',
  'references',
]);
const sharedReferences = new Interner<RuleReferences>();

/** Compiles a ModRule (namespace taken from metadata, '' when absent); throws InvalidModRuleError. */
export function compileModRule(rule: ModRule): CompiledRule {
  const { rule: compiled, problems } = analyzeModRule(rule);
  if (!compiled) throw new InvalidModRuleError(problems);
  return compiled;
}

/** Validates and compiles in one pass: every problem found, and the compiled rule when there are none. */
export function analyzeModRule(
  obj: unknown,
  options: CompileOptions = {},
): { rule?: CompiledRule; problems: ValidationProblem[] } {
  const problems: ValidationProblem[] = [];
  const problem: Report = Object.assign(
    (field: string, message: string): void => {
      problems.push({ field, message });
    },
    { count: () => problems.length },
  );

  if (!isJsonObject(obj)) {
    problem('', 'a ModRule must be an object');
    return { problems };
  }
  if (obj.apiVersion !== MODRULE_API_VERSION) {
    problem('apiVersion', `must be ${MODRULE_API_VERSION}, got ${describe(obj.apiVersion)}`);
  }
  if (obj.kind !== MODRULE_KIND) problem('kind', `must be ${MODRULE_KIND}, got ${describe(obj.kind)}`);

  let namespace = '';
  let name = '';
  const metadata = obj.metadata;
  if (!isJsonObject(metadata)) {
    problem('metadata', 'required');
  } else {
    if (typeof metadata.name !== 'string' || metadata.name === '') problem('metadata.name', 'required');
    else name = metadata.name;
    if (metadata.namespace !== undefined && metadata.namespace !== null) {
      if (typeof metadata.namespace !== 'string') problem('metadata.namespace', 'must be a string');
      else namespace = metadata.namespace;
    }
  }

  const spec = obj.spec;
  if (!isJsonObject(spec)) {
    problem('spec', 'required');
    return { problems };
  }
  for (const key of Object.keys(spec)) {
    if (!SPEC_FIELDS.has(key)) problem(`spec.${key}`, unknownField(key, SPEC_FIELDS));
  }

  const type = spec.type;
  if (type !== 'Patch' && type !== 'Reject')
    problem('spec.type', `must be Patch or Reject, got ${describe(type)}`);

  const operations = operationsOf(spec.admissionOperations, problem);
  const tier = tierOf(spec.executionTier, problem);

  const { match, itemKeys } = matchOf(spec.match, problem);
  const patch = patchOf(spec.patch, type, problem);
  const rejectMessage = rejectMessageOf(spec.rejectMessage, type, problem);
  const targetNamespaceRegex = namespaceRegexOf(spec.targetNamespaceRegex, problem);
  let targetNamespaceSelector: CompiledLabelSelector | undefined;
  if (spec.targetNamespaceSelector !== undefined && spec.targetNamespaceSelector !== null) {
    targetNamespaceSelector = compileLabelSelector(
      spec.targetNamespaceSelector,
      'spec.targetNamespaceSelector',
      problem,
    );
  }

  let named: ReferenceDecl[] = [];
  if (spec.references !== undefined && spec.references !== null) {
    const policy = options.references ?? DEFAULT_REFERENCE_POLICY;
    named = compileReferences(spec.references, namespace, policy, problem) ?? [];
  }

  if (problems.length > 0) return { problems };
  return {
    problems,
    rule: internedRule(
      namespace,
      name,
      {
        type: type as 'Patch' | 'Reject',
        tier,
        operations,
        match,
        rejectMessage,
        targetNamespaceRegex,
        targetNamespaceSelector,
      },
      itemKeys,
      spec.targetNamespaceSelector,
      patch,
      options.keepSource === false ? undefined : (obj as unknown as ModRule),
      referencesOf(named, match, patch, rejectMessage),
    ),
  };
}

/** What the rule reads besides its object; undefined for the many rules that read nothing else. */
function referencesOf(
  named: readonly ReferenceDecl[],
  match: readonly CompiledMatchItem[],
  patch: readonly CompiledPatchOperation[],
  rejectMessage: CompiledTemplate | undefined,
): RuleReferences | undefined {
  const owner = ruleOwnerReads(match, patch, rejectMessage);
  if (named.length === 0 && owner.levels === 0) return undefined;
  // Rules with equal references share one object: a request looks them up once for all of them.
  const key = JSON.stringify([owner, named.map(({ selector: _s, ...rest }) => rest)]);
  return sharedReferences.get(key, () => ({
    named,
    owner,
    secrets: named.some((d) => isSecretKind(d.group, d.kind)),
  }));
}
