import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { isJsonObject, JsonObject } from '../../util/json';
import { RuleSnapshot } from '../../store/rules';
import type { ReferenceSource } from '../../store/references';
import { InstalledNet } from '../../audit/dragnet';
import { auditObject } from '../../audit/evaluate';
import { QuarantineCheck } from '../../engine/admit';
import { objectLabels, ScanPlan, ScanTarget } from '../../audit/plan';
import { ObjectAudit, ObjectVerdict, resourceName, ListableResource } from '../../audit/types';
import { retry, sleep } from '../../kube/backoff';
import { isTransient, KubeApiError, KubeClient } from '../../kube/kube';
import { collectionPath } from './discovery';
import { RateLimiter } from './rate';
import { referencesFor } from './references';
import { messageOf } from '../../util/errors';
import { metadataOf } from '../../util/meta';

/** How an audit lists and evaluates. */
export interface ScanOptions {
  client: KubeClient;
  snapshot: RuleSnapshot;
  plan: ScanPlan;
  scope: InstalledNet;
  /** Passed to every list (server-side filter). */
  labelSelector?: string;
  /** Objects per list page; default 500. Memory holds one page at a time. */
  pageSize?: number;
  limiter?: RateLimiter;
  /** Budget: stop (partial) after listing this many objects. */
  maxObjects?: number;
  /** Budget: stop (partial) at this time (Date.now() milliseconds). */
  deadline?: number;
  signal?: AbortSignal;
  /**
   * Longest stretch of evaluation between two yields to the event loop; default 5 ms. The operator shares its event
   * loop with the webhook: a scan must not hold admissions up.
   */
  sliceMs?: number;
  /**
   * Share of the event loop's time the scan may take, (0, 1]; default 1. Below 1, each slice of evaluation is
   * followed by a pause in proportion, so a busy webhook keeps (1 - share) of the process for itself.
   */
  share?: number;
  maxBodyBytes?: number;
  /** The reference caches rules read from (the webhook's own); an object waits until they can answer for it. */
  references?: ReferenceSource;
  /** The webhook's quarantine check now, if any: rules it skips are `error` in the reports. */
  quarantined?: () => QuarantineCheck | undefined;
  onProgress?: (progress: ScanProgress) => void;
  /** How often onProgress is called; default 2 s. */
  progressEveryMs?: number;
}

/** Where a long audit is. */
export interface ScanProgress {
  listed: number;
  evaluated: number;
  lists: number;
  listsTotal: number;
  elapsedMs: number;
}

/** A list that failed: the audit goes on without it, and is partial. */
export interface ScanProblem {
  what: string;
  message: string;
  status: number;
}

/** How a scan went. */
export interface ScanResult {
  /** Objects listed. */
  listed: number;
  /** Objects some rule could reach (the others are not reported). */
  evaluated: number;
  verdicts: Record<ObjectVerdict, number>;
  problems: ScanProblem[];
  /** Why it stopped before the end (budget, deadline, cancelled); undefined when it went through. */
  stopped?: string;
  /** Nothing failed and nothing was left out: the results are the whole answer. */
  complete: boolean;
  elapsedMs: number;
}

/** Receives each evaluated object, with the resource it was listed from; awaited (backpressure). */
export type ObjectHandler = (audit: ObjectAudit, resource: ListableResource) => void | Promise<void>;

class Stop extends Error {}

/** The lists of one target: [path, namespaces to keep (null = all)]. */
function listsOf(
  target: ScanTarget,
): Array<{ path: string; keep: ReadonlySet<string> | null; what: string }> {
  const name = resourceName(target.resource);
  if (target.namespaces === null || target.clusterWide)
    return [
      {
        path: collectionPath(target.resource, null),
        keep: target.namespaces && new Set(target.namespaces),
        what: target.namespaces ? `${name} in all namespaces` : name,
      },
    ];
  return target.namespaces.map((ns) => ({
    path: collectionPath(target.resource, ns),
    keep: null,
    what: `${name} in namespace ${ns}`,
  }));
}

function describe(err: unknown, what: string): ScanProblem {
  const status = err instanceof KubeApiError ? err.status : 0;
  const message = messageOf(err);
  if (status === 403) return { what, status, message: `forbidden: cannot list ${what}: ${message}` };
  if (status === 404)
    return { what, status, message: `not found: ${what} is not served (any more): ${message}` };
  if (status === 410)
    return {
      what,
      status,
      message: `the list of ${what} expired part-way (410); its remaining pages are missing`,
    };
  return { what, status, message: `cannot list ${what}: ${message}` };
}

/**
 * Lists what the plan names, page by page, evaluates every object as the webhook would for an UPDATE of it, and
 * hands each result to `onObject`. Read-only. A list that fails is recorded and the scan goes on (partial); the
 * budget (objects, deadline) and the signal stop it early (partial too).
 */
export async function scanCluster(options: ScanOptions, onObject: ObjectHandler): Promise<ScanResult> {
  return new Scan(options, onObject).run();
}

/** One list of a scan: a target's collection, the namespaces to keep of it (null = all), for messages its name. */
interface ScanList {
  path: string;
  keep: ReadonlySet<string> | null;
  what: string;
  resource: ListableResource;
}

/** One scan under way: its lists, the counts so far, the budget and the slices of the event loop it takes. */
class Scan {
  private readonly started = Date.now();
  private readonly sliceMs: number;
  private readonly share: number;
  private readonly progressEvery: number;
  private readonly lists: ScanList[];
  private readonly result: ScanResult = {
    listed: 0,
    evaluated: 0,
    verdicts: { patch: 0, reject: 0, error: 0, pass: 0 },
    problems: [],
    complete: false,
    elapsedMs: 0,
  };
  private listsDone = 0;
  private lastProgress = this.started;
  private sliceStart = performance.now();

  constructor(
    private readonly options: ScanOptions,
    private readonly onObject: ObjectHandler,
  ) {
    this.sliceMs = options.sliceMs ?? 5;
    this.share = Math.min(1, Math.max(0.01, options.share ?? 1));
    this.progressEvery = options.progressEveryMs ?? 2000;
    this.lists = options.plan.targets.flatMap((t) => listsOf(t).map((l) => ({ ...l, resource: t.resource })));
  }

  async run(): Promise<ScanResult> {
    const result = this.result;
    try {
      for (const list of this.lists) {
        try {
          await this.scanList(list);
        } catch (err) {
          if (err instanceof Stop) throw err;
          result.problems.push(describe(err, list.what));
        }
        this.listsDone++;
      }
    } catch (err) {
      if (!(err instanceof Stop)) throw err;
      result.stopped = err.message;
    }
    result.elapsedMs = Date.now() - this.started;
    result.complete = result.problems.length === 0 && result.stopped === undefined;
    this.progress(true);
    return result;
  }

  /** Lists one collection page by page (each page retried on transient errors) and evaluates every page. */
  private async scanList(list: ScanList): Promise<void> {
    const { client, signal } = this.options;
    let token: string | undefined;
    do {
      this.checkBudget();
      await this.options.limiter?.take(signal);
      const page = await retry(
        () =>
          client.request('GET', list.path, {
            query: {
              limit: this.options.pageSize ?? 500,
              continue: token,
              labelSelector: this.options.labelSelector,
            },
          }),
        { attempts: 3, isTransient, backoff: { initialMs: 200, maxMs: 2000 }, signal },
      );
      const meta = metadataOf(page);
      token = typeof meta.continue === 'string' && meta.continue ? meta.continue : undefined;
      const items = Array.isArray(page.items) ? page.items : [];
      // Parsing the page held the event loop already: let waiting work run before evaluating it.
      await yieldToEventLoop();
      this.sliceStart = performance.now();
      await this.evaluatePage(items, list);
      this.progress();
    } while (token);
  }

  // Evaluates one page's objects, yielding the event loop after every slice of sliceMs (slept for when share < 1).
  private async evaluatePage(items: readonly unknown[], list: ScanList): Promise<void> {
    const { options, result } = this;
    const { snapshot, signal } = options;
    for (const item of items) {
      if (!isJsonObject(item)) continue;
      this.checkBudget();
      result.listed++;
      if (!this.wanted(item, list.resource, list.keep)) continue;
      if (options.references) await referencesFor(options.references, snapshot, item, list.resource);
      const audit = auditObject(item, list.resource, {
        snapshot,
        maxBodyBytes: options.maxBodyBytes,
        quarantined: options.quarantined?.(),
        references: options.references?.reader,
      });
      if (audit) {
        result.evaluated++;
        result.verdicts[audit.verdict]++;
        await this.onObject(audit, list.resource);
      }
      const spent = performance.now() - this.sliceStart;
      if (spent > this.sliceMs) {
        if (this.share < 1) await sleep((spent * (1 - this.share)) / this.share, signal);
        else await yieldToEventLoop();
        this.sliceStart = performance.now();
      }
    }
  }

  private wanted(item: JsonObject, resource: ListableResource, keep: ReadonlySet<string> | null): boolean {
    const { scope } = this.options;
    const meta = metadataOf(item);
    if (keep && !keep.has(String(meta.namespace ?? ''))) return false;
    const labels = objectLabels(item);
    if (!scope.selectsObject(labels)) return false;
    // The dragnet's namespaceSelector applies to Namespace objects by their own labels.
    return resource.kind !== 'Namespace' || resource.group !== '' || scope.selectsNamespace(labels);
  }

  private progress(force = false): void {
    const options = this.options;
    const now = Date.now();
    if (!options.onProgress || (!force && now - this.lastProgress < this.progressEvery)) return;
    this.lastProgress = now;
    options.onProgress({
      listed: this.result.listed,
      evaluated: this.result.evaluated,
      lists: this.listsDone,
      listsTotal: this.lists.length,
      elapsedMs: now - this.started,
    });
  }

  private checkBudget(): void {
    const { signal, maxObjects, deadline } = this.options;
    if (signal?.aborted) throw new Stop('cancelled');
    if (maxObjects !== undefined && this.result.listed >= maxObjects)
      throw new Stop(`stopped after ${this.result.listed} objects (the budget of one scan)`);
    if (deadline !== undefined && Date.now() >= deadline)
      throw new Stop(`stopped after ${Date.now() - this.started} ms (the time budget of one scan)`);
  }
}
