import { JsonObject } from '../util/json';
import type { CompiledRule } from '../rule/compile';
import { compileSharedTemplate } from '../template';
import { DEFAULT_CLUSTER_NAMESPACE, LAST_APPLIED_ANNOTATION } from '../rule/types';
import { celString, UnsupportedValueError } from './cel';
import { defaultDragnetMatch, DragnetMatch } from './dragnet';
import { idempotenceProblem } from './effects';
import { Guards, noLastAppliedGuard } from './guard';
import { compileMatchItem } from './match';
import { compilePatch, OperationEffect } from './patch';
import {
  mutatingPolicy,
  policyBinding,
  policyName,
  policyNameProblem,
  PolicyParts,
  validatingPolicy,
} from './policy';
import { withProbe } from './probe';
import { scopeCondition } from './scope';
import { Read, SelectContext } from './select-context';
import { compileTemplateBody } from './template';
import { NoCelForm } from './values';

/** How to compile: the namespace of cluster-wide rules and what the dragnet webhook sees. */
export interface NativeOptions {
  readonly clusterNamespace?: string;
  readonly dragnet?: DragnetMatch;
  /**
   * Compile Warn/DryRun Reject rules to bindings with validationActions Warn/Audit (`modrule export --native`).
   * The operator leaves them to the webhook: it confirms a policy is in force by a probe the policy refuses, which a
   * Warn or Audit binding never does, and the webhook records what such a rule would do (status, metrics, Events).
   */
  readonly unenforcedActions?: boolean;
}

/** The binding's validationActions for a Reject rule's enforcementAction. */
export const VALIDATION_ACTIONS = { Enforce: ['Deny'], Warn: ['Warn'], DryRun: ['Audit'] } as const;

/** Why a rule does not fit, at a field of the ModRule. */
export interface NativeReason {
  readonly field: string;
  readonly message: string;
}

/** A rule that compiles: its policy and binding, and what the webhook must keep doing for it. */
export interface NativeFit {
  readonly fits: true;
  readonly rule: CompiledRule;
  readonly policy: JsonObject;
  readonly binding: JsonObject;
  /**
   * The conditions under which the policy decides exactly as the engine would. Objects for which they do not hold
   * stay with the webhook (residual.ts); none: the webhook has nothing left to do for this rule.
   */
  readonly guards: Guards;
  /** What the rule reads and writes (operator/native/controller.ts checks them against the other rules). */
  readonly reads: readonly Read[];
  readonly effects: readonly OperationEffect[];
}

export interface NativeMisfit {
  readonly fits: false;
  readonly rule: CompiledRule;
  readonly reasons: readonly NativeReason[];
}

export type NativeCompilation = NativeFit | NativeMisfit;

/** Most match conditions a policy may have (the API server's limit is 64; two are the guards and the scope). */
const MAX_MATCH_ITEMS = 62;

/**
 * Compiles a ModRule to a MutatingAdmissionPolicy (Patch) or ValidatingAdmissionPolicy (Reject) with its binding,
 * when its CEL gives the same result as the engine; otherwise every reason it does not fit. Pure: no cluster.
 */
export function compileNative(rule: CompiledRule, options: NativeOptions = {}): NativeCompilation {
  const clusterNamespace = options.clusterNamespace ?? DEFAULT_CLUSTER_NAMESPACE;
  const dragnet = options.dragnet ?? defaultDragnetMatch(clusterNamespace);
  const reasons: NativeReason[] = [];
  const fail = (field: string, message: string) => reasons.push({ field, message });

  ruleReasons(rule, options, fail);

  const guards = new Guards();
  const ctx: SelectContext = { guards, reads: [] };
  if (rule.type === 'Patch') {
    guards.add(noLastAppliedGuard(LAST_APPLIED_ANNOTATION));
    ctx.reads.push({ root: 'object', tokens: ['metadata', 'annotations', LAST_APPLIED_ANNOTATION] });
  }

  let scope = 'true';
  try {
    scope = scopeCondition(rule, clusterNamespace);
  } catch (err) {
    if (!(err instanceof NoCelForm)) throw err;
    fail(
      rule.targetNamespaceSelector ? 'spec.targetNamespaceSelector' : 'spec.targetNamespaceRegex',
      err.message,
    );
  }

  const match: string[] = [];
  rule.match.forEach((item, i) => {
    try {
      match.push(compileMatchItem(item, ctx));
    } catch (err) {
      if (!(err instanceof NoCelForm || err instanceof UnsupportedValueError)) throw err;
      fail(`spec.match[${i}]`, `${item.select.source}: ${err.message}`);
    }
  });

  let patch: string | undefined;
  let effects: readonly OperationEffect[] = [];
  let message: string | undefined;
  if (rule.type === 'Patch') {
    try {
      const compiled = compilePatch(rule, ctx);
      patch = compiled.cel;
      effects = compiled.effects;
      const why = idempotenceProblem(rule, effects);
      if (why) fail(fieldOf(why, 'spec.patch'), why.replace(/^spec\.patch\[\d+\]:?\s*/, ''));
    } catch (err) {
      if (!(err instanceof NoCelForm)) throw err;
      fail(fieldOf(err.message, 'spec.patch'), err.message.replace(/^spec\.patch\[\d+\]:\s*/, ''));
    }
  } else {
    try {
      message = rejectMessage(rule, ctx);
    } catch (err) {
      if (!(err instanceof NoCelForm)) throw err;
      fail('spec.rejectMessage', err.message);
    }
  }
  if (reasons.length > 0) return { fits: false, rule, reasons };

  const parts: PolicyParts = { scope, guard: guards.cel(), match, patch, message };
  let policy: JsonObject;
  if (rule.type === 'Patch') {
    policy = mutatingPolicy(rule, parts, dragnet);
  } else {
    // On DELETE the engine matches Reject rules against the old object.
    const onDelete = rule.operations.has('DELETE');
    policy = validatingPolicy(
      rule,
      onDelete ? retarget(parts) : parts,
      dragnet,
      onDelete ? 'request.operation == "DELETE" ? oldObject : object' : undefined,
    );
  }
  // Measured with the probe the operator adds (native/probe.ts): the policy must fit either way.
  const tooLong = expressions(withProbe(policy)).find((e) => [...e].length > MAX_EXPRESSION);
  if (tooLong !== undefined)
    return {
      fits: false,
      rule,
      reasons: [
        {
          field: 'spec',
          message:
            `a CEL expression of ${[...tooLong].length} code points, over the API server's limit of ` +
            `${MAX_EXPRESSION} (long matchValues or messages)`,
        },
      ],
    };
  const binding = policyBinding(policy, VALIDATION_ACTIONS[rule.enforcement]);
  return { fits: true, rule, policy, binding, guards, reads: ctx.reads, effects };
}

/** What keeps the rule as a whole from fitting, whatever its criteria and patch: name, operations, fields. */
function ruleReasons(
  rule: CompiledRule,
  options: NativeOptions,
  fail: (field: string, message: string) => void,
): void {
  const name = policyName(rule);
  const nameProblem = policyNameProblem(name);
  if (nameProblem) fail('metadata.name', nameProblem);
  if (rule.type === 'Patch' && rule.operations.has('DELETE'))
    fail(
      'spec.admissionOperations',
      'DELETE: a MutatingAdmissionPolicy cannot act on DELETE, where a Patch rule still changes what Reject rules see',
    );
  if (rule.references && rule.references.named.length > 0)
    fail(
      'spec.references',
      'an admission policy reads no other objects than the one admitted and its Namespace: the webhook serves rules ' +
        'with references',
    );
  if (rule.enforcement !== 'Enforce') {
    if (rule.type === 'Patch')
      fail(
        'spec.enforcementAction',
        `${rule.enforcement}: a MutatingAdmissionPolicy cannot warn or dry-run a patch; the webhook serves the rule ` +
          'and records what it would patch',
      );
    else if (!options.unenforcedActions)
      fail(
        'spec.enforcementAction',
        `${rule.enforcement}: served by the webhook, which records what the rule would reject (status, metrics, ` +
          `Events); a ValidatingAdmissionPolicy binding with validationActions ${VALIDATION_ACTIONS[rule.enforcement][0]} ` +
          'refuses nothing, so the operator could not confirm it in force (modrule export --native writes one)',
      );
  }
  if (rule.match.length > MAX_MATCH_ITEMS)
    fail('spec.match', `more than ${MAX_MATCH_ITEMS} items (a policy has at most 64 match conditions)`);
}

/** The API server's limit on one CEL expression (code points). */
const MAX_EXPRESSION = 100_000;

function expressions(policy: JsonObject): string[] {
  const spec = policy.spec as JsonObject;
  const out: string[] = [];
  for (const list of [spec.matchConditions, spec.validations, spec.variables, spec.mutations])
    for (const item of (list ?? []) as JsonObject[]) {
      if (typeof item.expression === 'string') out.push(item.expression);
      if (typeof item.messageExpression === 'string') out.push(item.messageExpression);
      const patch = item.jsonPatch as JsonObject | undefined;
      if (patch && typeof patch.expression === 'string') out.push(patch.expression);
    }
  return out;
}

function fieldOf(message: string, fallback: string): string {
  return /^(spec\.patch\[\d+\])/.exec(message)?.[1] ?? fallback;
}

/** KubeMod's denial text, with the rendered rejectMessage when there is one and it is not empty. */
function rejectMessage(rule: CompiledRule, ctx: SelectContext): string {
  const prefix = `operation rejected by the following ModRule(s): ${rule.namespace}/${rule.name}`;
  if (!rule.rejectMessage) return celString(prefix);
  const tree = compileSharedTemplate(rule.rejectMessage.source).tree;
  if (tree.defines.size > 0) throw new NoCelForm('templates that define templates');
  const rendered = compileTemplateBody(tree.root, { ctx });
  if (rendered.constant !== undefined)
    return celString(rendered.constant === '' ? prefix : `${prefix}: "${rendered.constant}"`);
  return `[${rendered.cel}].map(m, m == "" ? ${celString(prefix)} : ${celString(`${prefix}: "`)} + m + "\\"")[0]`;
}

const OBJECT_ROOT = /(?<![\w.])object\[\?/g;

/** The same CEL reading variables.subject (the old object on DELETE) instead of object. */
function retarget(parts: PolicyParts): PolicyParts {
  const r = (s: string) => s.replace(OBJECT_ROOT, 'variables.subject[?');
  return {
    ...parts,
    guard: r(parts.guard),
    match: parts.match.map(r),
    message: parts.message && r(parts.message),
  };
}
