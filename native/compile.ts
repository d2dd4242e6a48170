import { JsonObject } from '../util/json';
import type { CompiledRule } from '../rule/compile';
import { DEFAULT_CLUSTER_NAMESPACE } from '../rule/types';
import { defaultDragnetMatch, DragnetMatch } from './dragnet';
import { Guards } from './guard';
import { OperationEffect } from './patch';
import {
  mutatingPolicy,
  policyBinding,
  policyName,
  policyNameProblem,
  PolicyParts,
  validatingPolicy,
} from './policy';
import { withProbe } from './probe';
import { Read } from './select-context';

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

import { compileParts, NativeReason } from './compile-parts';
import { mergeMembers } from './pod-rule';

export type { NativeReason } from './compile-parts';

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

/**
 * Compiles a ModRule to a MutatingAdmissionPolicy (Patch) or ValidatingAdmissionPolicy (Reject) with its binding,
 * when its CEL gives the same result as the engine; otherwise every reason it does not fit. A Pod rule with
 * controller variants is one policy for all of them (native/pod-rule.ts). Pure: no cluster.
 */
export function compileNative(rule: CompiledRule, options: NativeOptions = {}): NativeCompilation {
  const clusterNamespace = options.clusterNamespace ?? DEFAULT_CLUSTER_NAMESPACE;
  const dragnet = options.dragnet ?? defaultDragnetMatch(clusterNamespace);
  const reasons: NativeReason[] = [];
  const name = policyName(rule);
  const nameProblem = policyNameProblem(name);
  if (nameProblem) reasons.push({ field: 'metadata.name', message: nameProblem });
  reasons.push(...enforcementReasons(rule, options));
  const compiled = rule.variants?.length
    ? mergeMembers(
        rule,
        [rule, ...rule.variants].map((m) => compileParts(m, clusterNamespace)),
      )
    : compileParts(rule, clusterNamespace);
  if (!compiled.fits) reasons.push(...compiled.reasons);
  if (reasons.length > 0 || !compiled.fits) return { fits: false, rule, reasons };
  const { parts, guards, reads, effects } = compiled;
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
  return { fits: true, rule, policy, binding, guards, reads, effects };
}

/** Why a Warn/DryRun rule does not fit: a patch cannot be warned or dry-run natively; a rejection can, on export. */
function enforcementReasons(rule: CompiledRule, options: NativeOptions): NativeReason[] {
  if (rule.enforcement === 'Enforce') return [];
  const field = 'spec.enforcementAction';
  if (rule.type === 'Patch')
    return [
      {
        field,
        message:
          `${rule.enforcement}: a MutatingAdmissionPolicy cannot warn or dry-run a patch; the webhook serves the rule ` +
          'and records what it would patch',
      },
    ];
  if (options.unenforcedActions) return [];
  return [
    {
      field,
      message:
        `${rule.enforcement}: served by the webhook, which records what the rule would reject (status, metrics, ` +
        `Events); a ValidatingAdmissionPolicy binding with validationActions ${VALIDATION_ACTIONS[rule.enforcement][0]} ` +
        'refuses nothing, so the operator could not confirm it in force (modrule export --native writes one)',
    },
  ];
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

const OBJECT_ROOT = /(?<![\w.])object\[\?/g;

/** The same CEL reading variables.subject (the old object on DELETE) instead of object. */
function retarget(parts: PolicyParts): PolicyParts {
  const r = (s: string) => s.replace(OBJECT_ROOT, 'variables.subject[?');
  return {
    ...parts,
    guard: r(parts.guard),
    guards: parts.guards?.map(r),
    match: parts.match.map(r),
    message: parts.message && r(parts.message),
  };
}
