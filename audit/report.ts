import { isJsonObject, jsonEqual, JsonObject, JsonValue } from '../util/json';
import { patchSummary } from '../engine/unenforced';
import { ObjectAudit, ObjectRef, RuleResult } from './types';

/** The report APIs modrule writes: OpenReports (the default) or the wg-policy PolicyReport Kyverno writes. */
export type ReportFormat = 'openreports' | 'wgpolicyk8s';
export const REPORT_FORMATS: readonly ReportFormat[] = ['openreports', 'wgpolicyk8s'];

/** Group, version, and the namespaced and cluster kinds of each report API. */
export const REPORT_APIS: Record<
  ReportFormat,
  {
    group: string;
    version: string;
    namespaced: { kind: string; resource: string };
    cluster: { kind: string; resource: string };
  }
> = {
  openreports: {
    group: 'openreports.io',
    version: 'v1alpha1',
    namespaced: { kind: 'Report', resource: 'reports' },
    cluster: { kind: 'ClusterReport', resource: 'clusterreports' },
  },
  wgpolicyk8s: {
    group: 'wgpolicyk8s.io',
    version: 'v1alpha2',
    namespaced: { kind: 'PolicyReport', resource: 'policyreports' },
    cluster: { kind: 'ClusterPolicyReport', resource: 'clusterpolicyreports' },
  },
};

/** Every report modrule writes has this name (one per namespace, one cluster report) and these labels. */
export const REPORT_NAME = 'modrule-audit';
export const REPORT_SOURCE = 'modrule';
export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'modrule' } as const;
/** How many results a report leaves out to stay under MAX_REPORT_BYTES (passes first). */
export const OMITTED_ANNOTATION = 'modrule.io/omitted-results';
/** Set when the scan behind a report did not finish (budget, a list it could not make): why. */
export const PARTIAL_ANNOTATION = 'modrule.io/partial';

/**
 * etcd refuses objects over 1.5 MiB; a report stays well below. Smaller still because the operator builds, sends and
 * reads reports on the webhook's event loop: half a MiB is parsed or serialised in a few milliseconds.
 */
export const MAX_REPORT_BYTES = 512 * 1024;

/** What the report says for each rule verdict. */
const RESULT_OF: Record<RuleResult['verdict'], 'fail' | 'pass' | 'error'> = {
  patch: 'fail',
  reject: 'fail',
  error: 'error',
  pass: 'pass',
};
/** A Warn/DryRun rule's would-be patch or rejection is a `warn`: the webhook leaves the object as it is. */
function resultOf(r: RuleResult): ReportResult {
  return r.mode && (r.verdict === 'patch' || r.verdict === 'reject') ? 'warn' : RESULT_OF[r.verdict];
}
type ReportResult = 'fail' | 'warn' | 'pass' | 'error';
const ORDER = { fail: 0, warn: 1, error: 2, pass: 3 };
const MAX_MESSAGE_CHARS = 400;

interface Entry {
  ref: ObjectRef;
  policy: string;
  rule: string;
  category: string;
  result: ReportResult;
  message: string;
}

function truncate(s: string): string {
  return s.length > MAX_MESSAGE_CHARS ? `${s.slice(0, MAX_MESSAGE_CHARS - 3)}...` : s;
}

/** The message of one rule's result: what the webhook would do, in a line. */
export function resultMessage(audit: ObjectAudit, result: RuleResult): string {
  // Named so that flipping the rule to Enforce is a known step: "would be patched if enforced (DryRun): ...".
  const mode = result.mode ? ` if enforced (${result.mode})` : '';
  switch (result.verdict) {
    case 'patch': {
      const patch = result.patch ?? audit.patch;
      return truncate(
        `would be patched${mode}${patch.length ? `: ${patchSummary(patch)}` : ' (rejected by another rule)'}`,
      );
    }
    case 'reject':
      return truncate(`would be rejected${mode}${result.message ? `: ${result.message}` : ''}`);
    case 'error':
      return truncate(`failed: ${result.message ?? 'unknown error'}`);
    default:
      return 'in line with the rule';
  }
}

const compareEntries = (a: Entry, b: Entry): number =>
  ORDER[a.result] - ORDER[b.result] ||
  (a.ref.kind < b.ref.kind ? -1 : a.ref.kind > b.ref.kind ? 1 : 0) ||
  (a.ref.name < b.ref.name ? -1 : a.ref.name > b.ref.name ? 1 : 0) ||
  (a.policy < b.policy ? -1 : a.policy > b.policy ? 1 : 0);

/**
 * Results kept in memory per namespace: about what a report can hold (MAX_REPORT_BYTES), far fewer than 10,000
 * objects times 150 rules. Beyond it passes are only counted, and a failure takes the place of a pass.
 */
export const MAX_RESULTS_PER_NAMESPACE = 2500;

interface Collected {
  entries: Entry[];
  /** Indices of pass entries (a failure may take their place once the list is full). */
  passes: number[];
  summary: { pass: number; fail: number; warn: number; error: number; skip: number };
  /** Results counted but not kept. */
  dropped: number;
}

/**
 * Collects the results of an audit by namespace ('' for cluster-scoped objects) and turns them into one report per
 * namespace plus a cluster report. Keeps only what the reports hold (no objects, no patches), and at most
 * `maxPerNamespace` results per namespace (failures first): memory stays bounded however big the scan.
 */
export class ReportBuilder {
  private readonly byNamespace = new Map<string, Collected>();

  constructor(private readonly maxPerNamespace = MAX_RESULTS_PER_NAMESPACE) {}

  /** Adds one object's results. */
  add(audit: ObjectAudit): void {
    const ns = audit.ref.namespace;
    let c = this.byNamespace.get(ns);
    if (!c) {
      c = { entries: [], passes: [], summary: { pass: 0, fail: 0, warn: 0, error: 0, skip: 0 }, dropped: 0 };
      this.byNamespace.set(ns, c);
    }
    for (const r of audit.rules) {
      const result = resultOf(r);
      c.summary[result]++;
      const full = c.entries.length >= this.maxPerNamespace;
      if (full && (result === 'pass' || c.passes.length === 0)) {
        c.dropped++;
        continue;
      }
      const entry: Entry = {
        ref: audit.ref,
        policy: `${r.rule.namespace}/${r.rule.name}`,
        rule: r.rule.name,
        category: `ModRule ${r.type}`,
        result,
        message: resultMessage(audit, r),
      };
      if (full) {
        c.entries[c.passes.pop() as number] = entry;
        c.dropped++;
      } else {
        if (result === 'pass') c.passes.push(c.entries.length);
        c.entries.push(entry);
      }
    }
  }

  /** Namespaces with results ('' = cluster-scoped objects). */
  namespaces(): string[] {
    return [...this.byNamespace.keys()].sort();
  }

  /**
   * The report for one namespace ('' = the cluster report), or undefined without results. `previous` (the report
   * in the cluster) lends its timestamps to results that did not change, so an unchanged scan writes nothing new.
   */
  report(format: ReportFormat, namespace: string, now: Date, previous?: JsonObject): JsonObject | undefined {
    const c = this.byNamespace.get(namespace);
    if (!c || c.entries.length === 0) return undefined;
    const entries = [...c.entries].sort(compareEntries);
    const api = REPORT_APIS[format];
    const known = previousTimestamps(previous);
    const seconds = Math.floor(now.getTime() / 1000);
    const results: JsonObject[] = [];
    let bytes = 0;
    let omitted = c.dropped;
    for (const e of entries) {
      const result = toResult(e, { seconds, nanos: 0 });
      const same = known.get(identity(result));
      if (same) result.timestamp = same;
      const size = sizeOf(e);
      if (bytes + size > MAX_REPORT_BYTES) {
        omitted++;
        continue;
      }
      bytes += size;
      results.push(result);
    }
    const metadata: JsonObject = { name: REPORT_NAME, labels: { ...MANAGED_BY } };
    if (namespace) metadata.namespace = namespace;
    if (omitted > 0) metadata.annotations = { [OMITTED_ANNOTATION]: String(omitted) };
    const kind = namespace ? api.namespaced.kind : api.cluster.kind;
    const report: JsonObject = { apiVersion: `${api.group}/${api.version}`, kind, metadata };
    // OpenReports names the producer once per report; PolicyReport v1alpha2 only per result.
    if (format === 'openreports') report.source = REPORT_SOURCE;
    report.summary = { ...c.summary };
    report.results = results;
    return report;
  }
}

function toResult(e: Entry, timestamp: JsonObject): JsonObject {
  const resource: JsonObject = { apiVersion: e.ref.apiVersion, kind: e.ref.kind, name: e.ref.name };
  if (e.ref.namespace) resource.namespace = e.ref.namespace;
  if (e.ref.uid) resource.uid = e.ref.uid;
  return {
    source: REPORT_SOURCE,
    policy: e.policy,
    rule: e.rule,
    category: e.category,
    result: e.result,
    scored: true,
    message: e.message,
    resources: [resource],
    timestamp,
  };
}

// What a serialised result takes beyond its strings: field names, punctuation, timestamp (measured: about 230).
const RESULT_OVERHEAD_BYTES = 260;

/** A result's size in JSON, from its strings (serialising thousands of them just to measure would block). */
function sizeOf(e: Entry): number {
  const r = e.ref;
  return (
    RESULT_OVERHEAD_BYTES +
    2 * e.policy.length +
    e.category.length +
    e.message.length +
    r.apiVersion.length +
    r.kind.length +
    r.namespace.length +
    r.name.length +
    r.uid.length
  );
}

function identity(result: JsonObject): string {
  const resource = (result.resources as JsonObject[])[0];
  return `${String(result.policy)}\n${String(result.result)}\n${String(result.message)}\n${String(resource.uid ?? resource.name)}`;
}

function previousTimestamps(previous: JsonObject | undefined): Map<string, JsonValue> {
  const out = new Map<string, JsonValue>();
  const results = previous && Array.isArray(previous.results) ? previous.results : [];
  for (const r of results) {
    if (!isJsonObject(r) || !Array.isArray(r.resources) || !isJsonObject(r.resources[0])) continue;
    if (r.timestamp !== undefined) out.set(identity(r), r.timestamp);
  }
  return out;
}

/** Whether a built report says the same as the one in the cluster (results, summary, our annotations). */
export function sameReport(built: JsonObject, existing: JsonObject): boolean {
  const ours = (r: JsonObject) => {
    const annotations =
      isJsonObject(r.metadata) && isJsonObject(r.metadata.annotations) ? r.metadata.annotations : {};
    return [OMITTED_ANNOTATION, PARTIAL_ANNOTATION].map((a) => annotations[a] ?? null);
  };
  return (
    jsonEqual(built.summary ?? null, existing.summary ?? null) &&
    jsonEqual(built.results ?? [], existing.results ?? []) &&
    jsonEqual(ours(built), ours(existing))
  );
}
