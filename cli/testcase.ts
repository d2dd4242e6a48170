// Running a prepared suite: each case admitted as the webhook would, then checked against its expectation.
import { relative } from 'node:path';
import { stringify } from 'yaml';
import { admit, AdmissionOutcome } from '../engine/admit';
import { AdmissionExplanation, explainAdmission } from '../engine/explain';
import { JsonObject, JsonValue } from '../util/json';
import { AdmissionOperation } from '../rule/types';
import { RuleStore } from '../store/rules';
import type { ReferenceObjects } from '../store/references';
import { standInCluster } from './cluster';
import { admissionInput, restoreNamespace, resultObject, withNamespace } from './objects';
import { displayName, STDIN } from './io';
import { diffLines, firstMismatch, projectOnto, withContext } from './diff';
import { shortValue } from './explain';
import { Expectation } from './testfile';
import { OnError } from './failures';
import { label, Prepared, ruleKeyOf } from './testsuite';

/** One case's result. */
export interface CaseReport {
  test: string;
  file: string;
  resource: string;
  operation: AdmissionOperation;
  /** The ModRules the case ran with, when the test names them (otherwise all of the test's rules). */
  rules?: string[];
  expected: string;
  got: string;
  pass: boolean;
  /** Why it failed. */
  reason?: string;
  /** Unified YAML diff, expected (-) against got (+), for failed patched expectations. */
  diff?: string;
  explanation?: AdmissionExplanation;
  /** ModRules that failed at run time on the object although the case expects no `error:`. */
  unexpectedFailures?: { rule: string; message: string }[];
}

/**
 * Runs every case of a suite; failing cases (every case with explainAll) carry the explanation. A run-time failure
 * no `error:` asks for fails its case with `fail`; with `warn` the case is judged on the object as the webhook
 * admits it (without the failing rules' changes).
 */
export function runSuite(p: Prepared, explainAll: boolean, onError: OnError = 'fail'): CaseReport[] {
  type Entry = { store: RuleStore; references: ReferenceObjects };
  const stores = new Map<string, Entry>();
  const storeFor = (keys: string[]): Entry => {
    const id = keys.length === 0 ? '*' : [...keys].sort().join(',');
    let entry = stores.get(id);
    if (!entry) {
      const store = new RuleStore({
        clusterNamespace: p.spec.clusterNamespace,
        references: { allowSecrets: p.spec.allowSecretReferences },
      });
      const rules = keys.length === 0 ? p.rules : p.rules.filter((r) => keys.includes(ruleKeyOf(r)));
      for (const r of rules) store.upsertRule(r);
      entry = { store, references: standInCluster(store, p.cluster, p.spec.namespace) };
      stores.set(id, entry);
    }
    return entry;
  };
  return p.cases.map(({ result, candidate, ruleKeys }) => {
    const { store, references } = storeFor(ruleKeys);
    const snapshot = store.snapshot();
    const subject = withNamespace(candidate.object, candidate.namespace);
    const input = admissionInput(candidate.operation, subject, candidate.old, candidate.namespace);
    const outcome = admit(input, snapshot, undefined, { references, withholdSecrets: false });
    const object = restoreNamespace(resultObject(outcome, subject), candidate.object);
    const verdict = check(result.expect, outcome, object, onError);
    const unexpected = result.expect.kind === 'error' ? [] : outcome.failures;
    const report: CaseReport = {
      test: p.spec.name,
      file: displayPath(p.spec.file),
      resource: label(candidate),
      operation: candidate.operation,
      ...(ruleKeys.length > 0 ? { rules: ruleKeys } : {}),
      expected: describeExpectation(result.expect),
      got: describeOutcome(outcome),
      pass: verdict.pass,
      ...(verdict.reason ? { reason: verdict.reason } : {}),
      ...(verdict.diff ? { diff: verdict.diff } : {}),
      ...(unexpected.length > 0
        ? {
            unexpectedFailures: unexpected.map((f) => ({
              rule: `${f.rule.namespace}/${f.rule.name}`,
              message: f.message,
            })),
          }
        : {}),
    };
    if (!verdict.pass || explainAll)
      report.explanation = explainAdmission(input, snapshot, store.allRules(), references);
    return report;
  });
}

function displayPath(file: string): string {
  if (file === STDIN) return displayName(file);
  const rel = relative(process.cwd(), file);
  return rel === '' || rel.startsWith('..') ? file : rel;
}

function ruleText(r: { rule: { namespace: string; name: string }; message: string }): string {
  return `${r.rule.namespace}/${r.rule.name}${r.message ? `: ${r.message}` : ''}`;
}

function describeExpectation(e: Expectation): string {
  switch (e.kind) {
    case 'patched':
      return 'patched';
    case 'unchanged':
      return 'unchanged';
    case 'rejected':
      return e.message ? `rejected "${e.message}"` : 'rejected';
    case 'error':
      return e.message ? `error "${e.message}"` : 'error';
  }
}

function describeOutcome(o: AdmissionOutcome): string {
  const parts: string[] = [];
  if (!o.allowed) parts.push(`rejected: ${o.rejections.map(ruleText).join('; ')}`);
  else if (o.patch.length > 0) parts.push(`patched (${o.patch.length} op${o.patch.length === 1 ? '' : 's'})`);
  else parts.push('unchanged');
  if (o.failures.length > 0) parts.push(`error: ${o.failures.map(ruleText).join('; ')}`);
  return parts.join(', ');
}

function check(
  e: Expectation,
  o: AdmissionOutcome,
  object: JsonObject,
  onError: OnError,
): { pass: boolean; reason?: string; diff?: string } {
  const errors = o.failures.map(ruleText);
  if (e.kind === 'error') {
    if (errors.some((m) => m.includes(e.message))) return { pass: true };
    return {
      pass: false,
      reason:
        errors.length === 0 ? 'no rule failed at run time' : `no failure message contains "${e.message}"`,
    };
  }
  if (errors.length > 0 && onError === 'fail')
    return { pass: false, reason: `a rule failed at run time: ${errors.join('; ')}` };
  if (e.kind === 'rejected') {
    if (o.allowed) return { pass: false, reason: 'the object was admitted' };
    if (o.rejections.map(ruleText).some((m) => m.includes(e.message))) return { pass: true };
    return { pass: false, reason: `no rejection message contains "${e.message}"` };
  }
  if (!o.allowed) return { pass: false, reason: 'the object was rejected' };
  if (e.kind === 'unchanged') {
    if (o.patch.length === 0) return { pass: true };
    return {
      pass: false,
      reason: 'the rules changed the object',
      diff: yamlDiff(o.patch as unknown as JsonValue, []),
    };
  }
  const mismatch = firstMismatch(object, e.object, e.lists);
  const diff = mismatch ? yamlDiff(e.object, projectOnto(object, e.object, e.lists) ?? null) : undefined;
  if (mismatch) {
    const got = mismatch.actual === undefined ? 'nothing' : shortValue(mismatch.actual);
    const reason = mismatch.element
      ? `at ${mismatch.path}: no element contains ${shortValue(mismatch.expected)} after the ones before it (got ${got})`
      : `at ${mismatch.path}: expected ${shortValue(mismatch.expected)}, got ${got}`;
    return { pass: false, reason, diff };
  }
  if (o.patch.length === 0)
    return { pass: false, reason: 'no rule changed the object (it already looked like that)' };
  return { pass: true };
}

function yamlDiff(expected: JsonValue, actual: JsonValue): string {
  const lines = withContext(diffLines(toYaml(expected), toYaml(actual)));
  return lines.map((l) => `${l.kind} ${l.text}`).join('\n') + '\n';
}

function toYaml(v: JsonValue): string {
  return stringify(v, { lineWidth: 0, aliasDuplicateObjects: false });
}
