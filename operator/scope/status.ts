import { objectKey, splitKey } from '../../util/meta';
import { Facet, StatusFacets } from '../status/facets';

/** Ready's reason while the dragnet registration does not send a rule's objects yet. */
export const NOT_IN_FORCE_REASON = 'NotInForce';
/** WideFallback's reason while the registration is held at the configured net. */
export const HELD_WIDE_REASON = 'RegistrationHeldWide';

/** What the registration facet needs of the dragnet scope. */
export interface RegistrationState {
  /** Why the registration is held at the configured (wide) net, or null. */
  heldWide(): string | null;
}

/**
 * The `registration` facet of the rules' status (STATUS-FACETS): Ready False with reason NotInForce while the
 * registration does not send a rule's objects and it waited longer than it should (the Ready gate says so), and the
 * condition WideFallback on every valid rule while the registration is held at the configured net because a narrower
 * one could not be written or confirmed (the rules are in force through it; the message says why).
 */
export class ScopeStatus {
  private readonly notInForce = new Map<string, string>();
  private readonly rules = new Set<string>();
  private readonly flagged = new Set<string>();
  private wide: string | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly facets: StatusFacets | null,
    private readonly state: RegistrationState,
    private readonly pollMs = 1000,
  ) {}

  /** Starts looking at the scope every pollMs: holds end with time, and a failing write is known only to it. */
  start(): void {
    this.timer ??= setInterval(() => this.refresh(), this.pollMs);
    this.timer.unref();
  }

  /** The valid rules (namespace/name), from each scope computation. */
  setRules(keys: Iterable<string>): void {
    this.rules.clear();
    for (const k of keys) this.rules.add(k);
    this.refresh(true);
  }

  /** A rule whose objects the registration does not send yet, and why (null: it does now, or it is gone). */
  setNotInForce(namespace: string, name: string, why: string | null): void {
    const key = objectKey(namespace, name);
    if (why === null) this.notInForce.delete(key);
    else this.notInForce.set(key, why);
    this.apply(key);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private refresh(force = false): void {
    const wide = this.state.heldWide();
    if (!force && wide === this.wide) return;
    this.wide = wide;
    for (const key of new Set([...this.rules, ...this.flagged, ...this.notInForce.keys()])) this.apply(key);
  }

  private facetOf(key: string): Facet | null {
    const why = this.notInForce.get(key);
    const facet: Facet = {};
    if (why)
      facet.ready = {
        status: 'False',
        reason: NOT_IN_FORCE_REASON,
        message: `the dragnet registration does not send its objects yet: ${why}`,
      };
    if (this.wide && this.rules.has(key))
      facet.condition = {
        type: 'WideFallback',
        reason: HELD_WIDE_REASON,
        message:
          `the dragnet registration is held at the configured net. ${this.wide}; the rule is in force ` +
          'through it, and the API server sends the webhook every object of that net meanwhile.',
      };
    return facet.ready || facet.condition ? facet : null;
  }

  private apply(key: string): void {
    const facet = this.facetOf(key);
    const { namespace, name } = splitKey(key);
    if (facet) {
      this.flagged.add(key);
      this.facets?.set(namespace, name, 'registration', facet);
    } else if (this.flagged.delete(key)) this.facets?.clear(namespace, name, 'registration');
  }
}
