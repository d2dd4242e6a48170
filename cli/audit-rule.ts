import { CompiledRule } from '../rule/compile';
import { RuleSnapshot } from '../store/rules';
import { ObjectAudit, ObjectVerdict } from '../audit/types';
import { UsageError } from './io';

// `modrule audit --rule NAME`: what one rule does, or would do once enforced (a Warn/DryRun rule's would-be patch
// or rejection), to the objects that exist, with every other rule in force as it is. Before switching a rule from
// DryRun to Enforce, this is the list of what enforcing it changes in place.

/** The rule `name` names: `namespace/name`, or a name that only one rule has. */
export function ruleNamed(rules: readonly CompiledRule[], name: string): CompiledRule {
  const found = name.includes('/')
    ? rules.filter((r) => r.key === name)
    : rules.filter((r) => r.name === name);
  if (found.length === 1) return found[0];
  if (found.length === 0)
    throw new UsageError(`--rule ${name}: no such ModRule among the ${rules.length} loaded`);
  throw new UsageError(
    `--rule ${name}: ${found.length} ModRules have that name (${found
      .map((r) => r.key)
      .sort()
      .join(', ')}); give namespace/name`,
  );
}

/** The snapshot as seen by one rule alone: what the audit lists is what that rule can reach. */
export function reachOf(snapshot: RuleSnapshot, rule: CompiledRule): RuleSnapshot {
  return {
    clusterNamespace: snapshot.clusterNamespace,
    rulesFor: (namespace) => snapshot.rulesFor(namespace).filter((r) => r.key === rule.key),
    namespace: (name) => snapshot.namespace(name),
    node: (name) => snapshot.node(name),
    ruleCount: 1,
    namespaceCount: snapshot.namespaceCount,
    nodeCount: snapshot.nodeCount,
  };
}

/**
 * One object's audit narrowed to one rule: its verdict, its message, and its patch (a Warn/DryRun rule's would-be
 * patch; for an enforced rule, the patch the webhook would send, which other rules may add to).
 */
export function ruleView(audit: ObjectAudit, rule: CompiledRule): ObjectAudit {
  const result = audit.rules.find((r) => r.rule.namespace === rule.namespace && r.rule.name === rule.name);
  const verdict: ObjectVerdict = result?.verdict ?? 'pass';
  return {
    ref: audit.ref,
    verdict,
    patch: verdict === 'patch' ? (result?.patch ?? audit.patch) : [],
    message:
      verdict === 'reject' ? (result?.message ?? '') : verdict === 'error' ? (result?.message ?? '') : '',
    rules: result ? [result] : [],
  };
}
