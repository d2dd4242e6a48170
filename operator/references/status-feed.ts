import { JsonObject } from '../../util/json';
import { generationOf, nameOf, namespaceOf, objectKey } from '../../util/meta';
import { RuleStore } from '../../store/rules';
import type { InformerHandlers } from '../informer';
import type { StatusSink } from '../sync';
import type { ReferenceCaches } from './caches';
import { REFERENCE_MISSING, referenceMissingCondition, RuleCondition } from './status';

/*
 * Keeps each ModRule's ReferenceMissing condition current: told about every ModRule after the store took it (as
 * the native controller is), it remembers the latest object of the rules that read other objects, and when what
 * the caches answer for them changes (an object deleted, a kind that cannot be read), reports them again through
 * the same sink as every status report. The condition itself is computed when the status is written.
 */
export class ReferenceStatusFeed implements InformerHandlers {
  private readonly rules = new Map<string, JsonObject>();
  private readonly reported = new Map<string, string>();

  constructor(
    private readonly store: RuleStore,
    private readonly caches: ReferenceCaches,
    private readonly sink: StatusSink | null,
    /** A Warning Event on a rule whose references went missing (once per distinct message). */
    private readonly warn?: (rule: JsonObject, reason: string, message: string) => Promise<void>,
  ) {}

  replace(items: JsonObject[]): void {
    this.rules.clear();
    for (const item of items) this.upsert(item);
  }

  upsert(obj: JsonObject): void {
    const key = objectKey(namespaceOf(obj), nameOf(obj));
    if (this.store.ruleOf(namespaceOf(obj), nameOf(obj))?.references) this.rules.set(key, obj);
    else this.rules.delete(key);
  }

  remove(obj: JsonObject): void {
    const key = objectKey(namespaceOf(obj), nameOf(obj));
    this.rules.delete(key);
    this.reported.delete(key);
  }

  /** The conditions besides Ready `rule` carries now (the status writer's hook). */
  conditions(rule: JsonObject): RuleCondition[] {
    const compiled = this.store.ruleOf(namespaceOf(rule), nameOf(rule));
    const problems = compiled?.references ? this.caches.problemsOf(compiled) : [];
    const condition = referenceMissingCondition(rule, problems, generationOf(rule));
    return condition ? [condition] : [];
  }

  /** Reports every rule whose references' state changed since its last report. */
  refresh(): void {
    for (const [key, obj] of this.rules) {
      const compiled = this.store.ruleOf(namespaceOf(obj), nameOf(obj));
      if (!compiled) continue;
      const problems = this.caches.problemsOf(compiled).join('; ');
      if (this.reported.get(key) === problems) continue;
      const first = !this.reported.has(key);
      this.reported.set(key, problems);
      // Valid rules only reach here (the store holds them): their validation problems are none.
      if (!first || problems !== '') this.sink?.report(obj, []);
      if (problems !== '') void this.warn?.(obj, REFERENCE_MISSING, `references not found: ${problems}`);
    }
  }
}
