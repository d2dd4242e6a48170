import { AdmissionOutcome, RuleRef } from './admit';

/** The rule's display name, as KubeMod prints it. */
export function ruleName(ref: RuleRef): string {
  return `${ref.namespace}/${ref.name}`;
}

/** KubeMod's rejection message: `operation rejected by the following ModRule(s): ns/a: "msg",ns/b`. */
export function rejectionMessage(rejections: AdmissionOutcome['rejections']): string {
  const parts = rejections.map((r) => (r.message ? `${ruleName(r.rule)}: "${r.message}"` : ruleName(r.rule)));
  return `operation rejected by the following ModRule(s): ${parts.join(',')}`;
}
