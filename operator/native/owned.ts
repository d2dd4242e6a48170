import { JsonObject } from '../../util/json';
import { Logger } from '../../util/logger';
import { nameOf } from '../../util/meta';
import { policyCollection } from '../../native';
import { BackoffOptions } from '../../kube/backoff';
import { Informer } from '../../kube/informer';
import { KubeClient } from '../../kube/kube';
import { deleteOwned, isOwned, MANAGED_BY, OPERATOR, POLICY_KINDS } from './api';
import { compareVersions } from '../../scope/ownership';

/*
 * The policies and bindings the operator owns (label managed-by=modrule-operator), as the API server has them:
 * watched, so one edited or deleted behind the operator's back is noticed at once (operator/native/controller.ts takes its
 * rule back to the webhook and writes it again).
 */

/** What the watch reports: an owned object seen (or gone). */
export type OwnedChange = (obj: JsonObject, gone: boolean) => void;

/** The owned policies and bindings, kept in step by one informer per kind. */
export class OwnedPolicies {
  private readonly informers: Informer[];
  private readonly seen = new Map<string, JsonObject>();
  /** Owned objects the operator is deleting itself: their delete events are no news. */
  private readonly deleting = new Set<string>();
  /**
   * The resourceVersion of the last list or event of owned objects (a deletion's included): what the dragnet scope
   * orders replicas by when their views of the native rules differ (scope/ownership.ts). Null before any.
   */
  version: string | null = null;

  constructor(
    private readonly options: {
      client: KubeClient;
      logger: Logger;
      backoff?: BackoffOptions;
      onChange: OwnedChange;
    },
  ) {
    this.informers = POLICY_KINDS.map(
      (kind) =>
        new Informer({
          client: options.client,
          logger: options.logger,
          path: policyCollection(kind),
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind,
          labelSelector: `${MANAGED_BY}=${OPERATOR}`,
          backoff: options.backoff,
          handlers: this.handlers(kind, options.onChange),
        }),
    );
  }

  /** Notes the resourceVersion the kind's informer is at (set before its handlers run). */
  private advance(kind: string): void {
    const at = this.informers[POLICY_KINDS.indexOf(kind as (typeof POLICY_KINDS)[number])]?.resourceVersion;
    if (at && (this.version === null || compareVersions(at, this.version) > 0)) this.version = at;
  }

  start(): void {
    for (const i of this.informers) i.start();
  }

  async stop(): Promise<void> {
    await Promise.all(this.informers.map((i) => i.stop()));
  }

  /** Whether every kind has been listed once. */
  synced(): boolean {
    return this.informers.every((i) => i.hasSynced());
  }

  /** Whether an owned object of this kind and name was last seen to exist. */
  has(kind: string, name: string): boolean {
    return this.seen.has(`${kind}/${name}`);
  }

  /** Deletes an owned object as the operator's own deletion (ownDeletion tells its delete event apart). */
  async delete(kind: string, name: string): Promise<void> {
    this.deleting.add(`${kind}/${name}`);
    await deleteOwned(this.options.client, kind, name);
  }

  /** Whether a delete event is of an object the operator deleted itself (each counts once). */
  ownDeletion(obj: JsonObject): boolean {
    return this.deleting.delete(`${String(obj.kind)}/${nameOf(obj)}`);
  }

  /** An object of this name is written again: a later delete event of it is news again. */
  recreated(kind: string, name: string): void {
    this.deleting.delete(`${kind}/${name}`);
  }

  /** Every owned object last seen. */
  objects(): Iterable<JsonObject> {
    return this.seen.values();
  }

  private handlers(kind: string, onChange: OwnedChange) {
    const change = (obj: JsonObject, gone: boolean) => {
      const id = `${String(obj.kind ?? kind)}/${nameOf(obj)}`;
      if (gone) this.seen.delete(id);
      else this.seen.set(id, obj);
      onChange(obj, gone);
    };
    return {
      replace: (items: JsonObject[]) => {
        this.advance(kind);
        const listed = new Set(items.map((i) => `${kind}/${nameOf(i)}`));
        for (const [id, obj] of [...this.seen])
          if (id.startsWith(`${kind}/`) && !listed.has(id)) change(obj, true);
        for (const item of items) if (isOwned(item)) change(item, false);
      },
      upsert: (obj: JsonObject) => {
        this.advance(kind);
        change(obj, false);
      },
      remove: (obj: JsonObject) => {
        this.advance(kind);
        change(obj, true);
      },
    };
  }
}
