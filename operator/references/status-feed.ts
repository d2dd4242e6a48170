import { JsonObject } from '../../util/json';
import { objectKey, splitKey } from '../../util/meta';
import { RuleStore } from '../../store/rules';
import { warningEvent } from '../status/events';
import type { StatusReporter } from '../status/reporter';
import type { ReferenceCaches } from './caches';
import { REFERENCE_MISSING, referenceFacet } from './status';

/*
 * The `references` status source: for every rule that reads other objects, sets the ReferenceMissing condition while
 * one is not found or cannot be read (and a Warning Event once per distinct message), and clears it once all are
 * found again. Called (debounced) whenever what the caches answer may have changed.
 */
export class ReferenceStatus {
  private readonly shown = new Map<string, string>();
  private readonly posted = new Map<string, string>();
  private retry: NodeJS.Timeout | null = null;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly store: RuleStore,
    private readonly caches: ReferenceCaches,
    private readonly status: StatusReporter | null,
  ) {
    this.unsubscribe = caches.onStatusChange(() => this.refresh());
  }

  /** Sets or clears each rule's facet to what the caches answer now. */
  refresh(): void {
    const status = this.status;
    if (!status) return;
    const current = new Set<string>();
    for (const rule of this.store.allRules()) {
      if (!rule.references) continue;
      const key = objectKey(rule.namespace, rule.name);
      const facet = referenceFacet(this.caches.problemsOf(rule));
      if (!facet?.condition) continue;
      current.add(key);
      const message = facet.condition.message;
      if (this.shown.get(key) !== message) {
        status.set(rule.namespace, rule.name, 'references', facet);
        this.shown.set(key, message);
      }
      if (this.posted.get(key) === message) continue;
      if (this.event(rule.namespace, rule.name, message)) this.posted.set(key, message);
      else this.retryLater();
    }
    for (const key of this.shown.keys()) {
      if (current.has(key)) continue;
      this.shown.delete(key);
      this.posted.delete(key);
      const { namespace, name } = splitKey(key);
      status.clear(namespace, name, 'references');
    }
  }

  /** Stops listening and the retry timer. */
  stop(): void {
    this.unsubscribe();
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
  }

  private retryLater(): void {
    if (this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      this.refresh();
    }, 2000);
    this.retry.unref();
  }

  // False when the reporter does not know the rule yet (its first report waits for the registration): next refresh.
  private event(namespace: string, name: string, message: string): boolean {
    const status = this.status;
    const id = status?.identityOf(namespace, name);
    if (!status || !id) return false;
    const event: JsonObject = warningEvent(id, {
      reason: REFERENCE_MISSING,
      message,
      digestOf: `${id.uid}\nreferences\n${message}`,
      now: new Date(),
      instance: status.instance,
    });
    void status.postEvent(event);
    return true;
  }
}
