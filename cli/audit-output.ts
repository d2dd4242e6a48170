import { JsonObject } from '../util/json';
import { stringifyManifests } from '../util/yaml';
import { ObjectAudit } from '../audit/types';
import { ReportBuilder, ReportFormat } from '../audit/report';
import { ApplyOutcome } from '../operator/audit/apply';
import { ScanProblem, ScanProgress, ScanResult } from '../operator/audit/scan';
import { CommandIO } from './io';

/** How `modrule audit` prints: streamed as objects come, so memory stays flat however many there are. */
export interface AuditOutput {
  object(audit: ObjectAudit, applied?: ApplyOutcome): void;
  finish(summary: AuditSummary): void;
}

/** Totals of one run, for the last lines (text), the `summary` member (json) or stderr (report). */
export interface AuditSummary {
  scan: ScanResult;
  problems: ScanProblem[];
  notes: string[];
  resources: number;
  applied?: Record<ApplyOutcome['status'], number>;
  conflicts: number;
}

const LABELS: Record<ObjectAudit['verdict'], string> = {
  patch: 'would patch',
  reject: 'would reject',
  error: 'failed',
  pass: 'in line',
};

function objectName(audit: ObjectAudit): string {
  const { kind, namespace, name } = audit.ref;
  return `${kind} ${namespace ? `${namespace}/` : ''}${name}`;
}

function rulesBy(audit: ObjectAudit, verdict: string): string {
  return audit.rules
    .filter((r) => r.verdict === verdict)
    .map((r) => `${r.rule.namespace}/${r.rule.name}`)
    .join(', ');
}

/** One line (plus the request under --dry-run) for an object that would change or failed; nothing when in line. */
function textLines(audit: ObjectAudit, applied: ApplyOutcome | undefined): string {
  if (audit.verdict === 'pass' && !applied) return '';
  let detail: string;
  if (audit.verdict === 'patch')
    detail = `by ${rulesBy(audit, 'patch')}: ${audit.patch.map((o) => `${o.op} ${o.path}`).join(', ')}`;
  else if (audit.verdict === 'reject') detail = audit.message;
  else
    detail = audit.rules
      .filter((r) => r.verdict === 'error')
      .map((r) => `${r.rule.namespace}/${r.rule.name}: ${r.message ?? ''}`)
      .join('; ');
  // A Warn/DryRun rule's own view (audit --rule): the object is left as it is until the rule is enforced.
  const mode = audit.rules.length === 1 ? audit.rules[0].mode : undefined;
  if (mode) detail += ` (${mode}: not enforced yet)`;
  let line = `${LABELS[audit.verdict].padEnd(13)} ${objectName(audit)}  ${detail}\n`;
  if (applied) {
    const retried = applied.conflicts
      ? ` after ${applied.conflicts} conflict(s), retried from a fresh read`
      : '';
    const what: Record<ApplyOutcome['status'], string> = {
      patched: `patched${retried}`,
      'dry-run': `dry run accepted${retried}; would send:`,
      'in-line': `in line after a fresh read${retried}`,
      rejected: 'not touched: a Reject rule would refuse the update',
      gone: 'not touched: deleted meanwhile',
      failed: `not patched: ${'message' in applied ? applied.message : ''}`,
    };
    line += `              -> ${what[applied.status]}\n`;
    if (applied.status === 'dry-run') {
      const r = applied.request;
      line +=
        `                 ${r.method} ${r.path}?${new URLSearchParams(r.query).toString()}\n` +
        `                 Content-Type: ${r.contentType}\n` +
        `                 ${JSON.stringify(r.body)}\n`;
    }
  }
  return line;
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;
}

/** The closing lines: totals, what was written, and whether the answer is partial. */
export function summaryText(s: AuditSummary): string {
  const v = s.scan.verdicts;
  const lines = [
    `audited ${plural(s.scan.evaluated, 'object')} of ${plural(s.resources, 'resource')} (${s.scan.listed.toLocaleString('en-US')} listed) ` +
      `in ${(s.scan.elapsedMs / 1000).toFixed(1)} s: ${v.patch} would be patched, ${v.reject} would be rejected, ` +
      `${v.error} failed, ${v.pass} in line`,
  ];
  if (s.applied) {
    const a = s.applied;
    lines.push(
      `applied: ${a.patched} patched, ${a['dry-run']} dry run only, ${a['in-line']} in line after a fresh read, ` +
        `${a.rejected} rejected (not touched), ${a.gone} gone, ${a.failed} failed; ${s.conflicts} conflict(s) retried`,
    );
  }
  for (const n of s.notes) lines.push(`note: ${n}`);
  if (s.scan.stopped) lines.push(`partial: ${s.scan.stopped}`);
  for (const p of s.problems) lines.push(`partial: ${p.message}`);
  return lines.join('\n') + '\n';
}

/** The JSON form of one object's audit (and what --apply did). */
export function auditJson(audit: ObjectAudit, applied?: ApplyOutcome): JsonObject {
  const out: JsonObject = {
    apiVersion: audit.ref.apiVersion,
    kind: audit.ref.kind,
    namespace: audit.ref.namespace || null,
    name: audit.ref.name,
    verdict: audit.verdict,
    patch: audit.patch as unknown as JsonObject[],
    message: audit.message || null,
    rules: audit.rules.map((r) => ({
      rule: `${r.rule.namespace}/${r.rule.name}`,
      type: r.type,
      verdict: r.verdict,
      message: r.message ?? null,
      ...(r.mode ? { mode: r.mode } : {}),
    })),
  };
  if (applied) out.applied = applied as unknown as JsonObject;
  return out;
}

function summaryJson(s: AuditSummary): JsonObject {
  return {
    listed: s.scan.listed,
    audited: s.scan.evaluated,
    verdicts: s.scan.verdicts,
    ...(s.applied ? { applied: s.applied, conflicts: s.conflicts } : {}),
    complete: s.scan.complete && s.problems.length === 0,
    stopped: s.scan.stopped ?? null,
    problems: s.problems.map((p) => p.message),
    notes: s.notes,
  };
}

/** The printer for --output text|json|report. */
export function auditOutput(
  io: CommandIO,
  output: 'text' | 'json' | 'report',
  reportFormat: ReportFormat,
): AuditOutput {
  if (output === 'json') {
    let first = true;
    io.stdout('{"objects": [');
    return {
      object: (audit, applied) => {
        io.stdout(`${first ? '\n' : ',\n'}  ${JSON.stringify(auditJson(audit, applied))}`);
        first = false;
      },
      finish: (s) =>
        io.stdout(`${first ? '' : '\n'}],\n"summary": ${JSON.stringify(summaryJson(s), null, 2)}}\n`),
    };
  }
  if (output === 'report') {
    const builder = new ReportBuilder();
    return {
      object: (audit) => builder.add(audit),
      finish: (s) => {
        const now = new Date();
        const reports = builder
          .namespaces()
          .map((ns) => builder.report(reportFormat, ns, now))
          .filter((r): r is JsonObject => r !== undefined);
        io.stdout(stringifyManifests(reports));
        io.stderr(summaryText(s));
      },
    };
  }
  return {
    object: (audit, applied) => {
      const text = textLines(audit, applied);
      if (text) io.stdout(text);
    },
    finish: (s) => io.stdout(summaryText(s)),
  };
}

/** The progress line on stderr. */
export function progressLine(p: ScanProgress): string {
  const rate = p.elapsedMs > 0 ? Math.round((p.listed / p.elapsedMs) * 1000) : 0;
  return (
    `modrule audit: ${plural(p.listed, 'object')} listed, ${p.evaluated.toLocaleString('en-US')} audited, ` +
    `${p.lists}/${p.listsTotal} lists, ${rate.toLocaleString('en-US')}/s\n`
  );
}
