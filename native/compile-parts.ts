import type { CompiledRule } from '../rule/compile';
import { compileSharedTemplate } from '../template';
import { LAST_APPLIED_ANNOTATION } from '../rule/types';
import { celString, UnsupportedValueError } from './cel';
import { idempotenceProblem } from './effects';
import { Guards, noLastAppliedGuard } from './guard';
import { compileMatchItem } from './match';
import { compilePatch, OperationEffect } from './patch';
import { PolicyParts } from './policy';
import { scopeCondition } from './scope';
import { Read, SelectContext } from './select-context';
import { compileTemplateBody } from './template';
import { NoCelForm } from './values';

// One compiled rule's CEL: what a policy is built from (native/compile.ts), or why it has none.

/** Why a rule does not fit, at a field of the ModRule. */
export interface NativeReason {
  readonly field: string;
  readonly message: string;
}

/** A rule's CEL parts, its guards and what it reads and writes; or the reasons it has none. */
export type CompiledParts =
  | {
      readonly fits: true;
      readonly parts: PolicyParts;
      readonly guards: Guards;
      readonly reads: readonly Read[];
      readonly effects: readonly OperationEffect[];
    }
  | { readonly fits: false; readonly reasons: readonly NativeReason[] };

/** Most match conditions a policy may have (the API server's limit is 64; two are the guards and the scope). */
const MAX_MATCH_ITEMS = 62;

/** The CEL of one compiled rule (a Pod rule's variant included), with its guards; or every reason it has none. */
export function compileParts(rule: CompiledRule, clusterNamespace: string): CompiledParts {
  const reasons: NativeReason[] = [];
  const fail = (field: string, message: string) => reasons.push({ field, message });

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
  if (rule.match.length > MAX_MATCH_ITEMS)
    fail('spec.match', `more than ${MAX_MATCH_ITEMS} items (a policy has at most 64 match conditions)`);

  const guards = new Guards();
  const ctx: SelectContext = { guards, reads: [], podController: rule.podController };
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
  if (reasons.length > 0) return { fits: false, reasons };
  return {
    fits: true,
    parts: { scope, guard: guards.cel(), match, patch, message },
    guards,
    reads: ctx.reads,
    effects,
  };
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

function fieldOf(message: string, fallback: string): string {
  return /^(spec\.patch\[\d+\])/.exec(message)?.[1] ?? fallback;
}
