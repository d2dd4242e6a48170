import { isJsonObject, JsonObject } from '../../util/json';
import { keyOf, metadataOf } from '../../util/meta';
import { SERVE_ANNOTATION } from '../../native';
import { NativeMode } from './types';

/*
 * The ModRules that ask to be served natively, as the informer delivers them (operator/native/controller.ts), and
 * those that stopped asking: their status says so once their policy is gone.
 */

/** Whether a rule asks to be served natively in this mode (annotation native.modrule.io/serve). */
export function asksNative(mode: Exclude<NativeMode, 'off'>, rule: JsonObject): boolean {
  const meta = metadataOf(rule);
  const annotation = isJsonObject(meta.annotations) ? meta.annotations[SERVE_ANNOTATION] : undefined;
  return mode === 'all' ? annotation !== 'false' : annotation === 'true';
}

/** The rules asking now, by key, and those that stopped asking (annotation removed) and have not been torn down. */
export class AskingRules {
  private readonly rules = new Map<string, JsonObject>();
  private readonly leaving = new Map<string, JsonObject>();

  constructor(private readonly mode: Exclude<NativeMode, 'off'>) {}

  get(key: string): JsonObject | undefined {
    return this.rules.get(key);
  }

  has(key: string): boolean {
    return this.rules.has(key);
  }

  keys(): IterableIterator<string> {
    return this.rules.keys();
  }

  /** Takes a rule as delivered; one that stopped asking is kept as leaving where `known` (it has a state). */
  take(obj: JsonObject, known: boolean): void {
    const key = keyOf(obj);
    if (asksNative(this.mode, obj)) this.rules.set(key, obj);
    else if (this.rules.delete(key) || known) this.leaving.set(key, obj);
  }

  /** The rule is gone. */
  forget(key: string): void {
    this.rules.delete(key);
    this.leaving.delete(key);
  }

  /** The last version of a rule that stopped asking, once (undefined: none). */
  takeLeaving(key: string): JsonObject | undefined {
    const left = this.leaving.get(key);
    this.leaving.delete(key);
    return left;
  }
}
