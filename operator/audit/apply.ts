import { isJsonObject, JsonObject, JsonValue } from '../../util/json';
import { JsonPatchOperation } from '../../patch/operation';
import { ObjectAudit, ListableResource } from '../../audit/types';
import { JSON_PATCH, KubeApiError, KubeClient } from '../../kube/kube';
import { objectPath } from './discovery';
import { RateLimiter } from './rate';
import { messageOf } from '../../util/errors';

/** The field manager modrule's writes are recorded under (managedFields). */
export const FIELD_MANAGER = 'modrule';

/** One request exactly as it is sent (for --dry-run, and the report). */
export interface PlannedRequest {
  method: 'PATCH';
  path: string;
  query: Record<string, string>;
  contentType: string;
  body: JsonPatchOperation[];
}

/** What bringing one object in line came to. */
export type ApplyOutcome =
  /** Written (after `conflicts` retries from a fresh read). */
  | { status: 'patched'; request: PlannedRequest; conflicts: number }
  /** --dry-run: the server's dry run accepted it; nothing written. */
  | { status: 'dry-run'; request: PlannedRequest; conflicts: number }
  /** After a conflict, the fresh object needed nothing any more. */
  | { status: 'in-line'; conflicts: number }
  /** A Reject rule would refuse the update: not touched. */
  | { status: 'rejected'; message: string; conflicts: number }
  /** Deleted meanwhile. */
  | { status: 'gone'; conflicts: number }
  /** The API server refused the dry run or the patch (RBAC, validation, another admission controller). */
  | { status: 'failed'; message: string; httpStatus: number; conflicts: number };

export interface ApplyOptions {
  client: KubeClient;
  limiter?: RateLimiter;
  /** Send only the server-side dry run. */
  dryRun: boolean;
  /** Tries per object before giving up on conflicts; default 5. */
  maxAttempts?: number;
  /** Evaluates a fresh copy of the object (after a conflict); undefined when no rule applies any more. */
  reaudit: (object: JsonObject, resource: ListableResource) => ObjectAudit | undefined;
  signal?: AbortSignal;
}

/**
 * The patch that brings the object in line: exactly the webhook's patch, guarded by a `test` of the resourceVersion
 * it was computed from, so it applies to that version or not at all (the API server answers 422, and the object is
 * read again). A JSON patch rather than server-side apply: it is the webhook's own answer (RFC 6902, array indices
 * and removals included, which an apply configuration cannot express), it takes no field ownership away from Helm,
 * kubectl or GitOps tools (server-side apply would make modrule the owner and their next apply a conflict), and the
 * test makes it a compare-and-swap.
 */
export function plannedRequest(
  audit: ObjectAudit,
  resource: ListableResource,
  dryRun: boolean,
): PlannedRequest {
  const query: Record<string, string> = { fieldManager: FIELD_MANAGER };
  if (dryRun) query.dryRun = 'All';
  return {
    method: 'PATCH',
    path: objectPath(resource, audit.ref.namespace, audit.ref.name),
    query,
    contentType: JSON_PATCH,
    body: [
      { op: 'test', path: '/metadata/resourceVersion', value: audit.ref.resourceVersion },
      ...audit.patch,
    ],
  };
}

const statusOf = (err: unknown) => (err instanceof KubeApiError ? err.status : 0);

/** The message with the server's causes (a 422's field errors, a webhook's denial). */
export function serverMessage(err: unknown): string {
  const message = messageOf(err);
  if (!(err instanceof KubeApiError) || !err.body || !isJsonObject(err.body.details)) return message;
  const causes = Array.isArray(err.body.details.causes) ? err.body.details.causes : [];
  const parts = causes
    .filter(isJsonObject)
    .map((c: JsonObject) =>
      [c.field, c.message].filter((x: JsonValue | undefined) => typeof x === 'string').join(': '),
    )
    .filter(Boolean);
  return parts.length > 0 ? `${message} (${parts.join('; ')})` : message;
}

async function send(options: ApplyOptions, request: PlannedRequest): Promise<JsonObject> {
  await options.limiter?.take(options.signal);
  return options.client.request(request.method, request.path, {
    query: request.query,
    body: request.body,
    contentType: request.contentType,
  });
}

/**
 * Brings one object in line: a server-side dry run of the patch first (admission, validation and RBAC are checked
 * and nothing is written), then the patch itself unless `dryRun`. The write is an ordinary update, so it passes
 * through the whole admission chain, the dragnet webhook included. A conflict (the object changed since it was read)
 * is retried from a fresh read and evaluation; an object a Reject rule would refuse is left as it is.
 */
export async function bringInLine(
  first: ObjectAudit,
  resource: ListableResource,
  options: ApplyOptions,
): Promise<ApplyOutcome> {
  const max = options.maxAttempts ?? 5;
  let audit: ObjectAudit | undefined = first;
  let conflicts = 0;
  for (let attempt = 1; ; attempt++) {
    if (!audit || audit.verdict === 'pass' || audit.verdict === 'error')
      return audit?.verdict === 'error'
        ? { status: 'failed', message: audit.message || 'a rule failed', httpStatus: 0, conflicts }
        : { status: 'in-line', conflicts };
    if (audit.verdict === 'reject') return { status: 'rejected', message: audit.message, conflicts };
    const dry = plannedRequest(audit, resource, true);
    const real = plannedRequest(audit, resource, false);
    try {
      await send(options, dry);
      if (options.dryRun) return { status: 'dry-run', request: real, conflicts };
      await send(options, real);
      return { status: 'patched', request: real, conflicts };
    } catch (err) {
      const status = statusOf(err);
      if (status === 404) return { status: 'gone', conflicts };
      if (status !== 409 && status !== 422)
        return { status: 'failed', message: serverMessage(err), httpStatus: status, conflicts };
      // 422 is also how the API server answers a failed `test`: it is a conflict if the object moved on.
      await options.limiter?.take(options.signal);
      let fresh: JsonObject;
      try {
        fresh = await options.client.request('GET', real.path);
      } catch (readErr) {
        if (statusOf(readErr) === 404) return { status: 'gone', conflicts };
        return {
          status: 'failed',
          message: serverMessage(readErr),
          httpStatus: statusOf(readErr),
          conflicts,
        };
      }
      const version = isJsonObject(fresh.metadata) ? fresh.metadata.resourceVersion : undefined;
      if (status === 422 && version === audit.ref.resourceVersion)
        return { status: 'failed', message: serverMessage(err), httpStatus: status, conflicts };
      conflicts++;
      if (attempt >= max)
        return {
          status: 'failed',
          message: `still changing after ${attempt} tries: ${serverMessage(err)}`,
          httpStatus: status,
          conflicts,
        };
      audit = options.reaudit(fresh, resource);
    }
  }
}

/** Runs tasks with at most `width` in flight; submit() waits while the pool is full (bounded memory). */
export class Pool {
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly width: number) {}

  async submit(task: () => Promise<void>): Promise<void> {
    while (this.running.size >= this.width) await Promise.race(this.running);
    const p: Promise<void> = task().finally(() => this.running.delete(p));
    this.running.add(p);
  }

  /** Waits for every task submitted so far. */
  async drain(): Promise<void> {
    await Promise.all(this.running);
  }
}
