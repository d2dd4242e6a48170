import { isJsonObject, jsonEqual, JsonObject, JsonValue } from '../util/json';
import { LAST_APPLIED_ANNOTATION } from '../rule/types';
import { applyOperationsShared, ResolvedOperation } from './patch';
import { stableStringify } from './stable-stringify';
import { annotationsOf, SYNTHETIC_REFS } from './subject';

/**
 * kubectl's last-applied-configuration annotation, patched with the same resolved operations as the object so a
 * later `kubectl apply` does not undo the rules' changes. Operations that do not apply to it are skipped.
 */
export class LastApplied {
  private readonly text: string | undefined;
  private parsed = false;
  private original: JsonValue | undefined;
  private doc: JsonValue | undefined;
  // Copy on write: `original` is never changed, so no up-front clone is needed to compare at the end.
  private readonly owned = new Set<object>();

  constructor(subject: JsonObject) {
    const text = annotationsOf(subject)?.[LAST_APPLIED_ANNOTATION];
    if (typeof text === 'string') this.text = text;
  }

  /** Applies one rule's resolved operations to the annotation (those that apply to it). */
  apply(ops: readonly ResolvedOperation[]): void {
    // Parsed on first use: most requests match no Patch rule and never need it.
    if (!this.parsed) this.parse();
    if (this.doc === undefined) return;
    for (const o of ops) {
      if (o.tokens[0] === SYNTHETIC_REFS) continue;
      try {
        this.doc = applyOperationsShared(this.doc, [o], this.owned);
      } catch {
        // e.g. replace of a field the user never set: the annotation simply does not mention it.
      }
    }
  }

  private parse(): void {
    this.parsed = true;
    if (this.text === undefined) return;
    try {
      const parsed = JSON.parse(this.text) as JsonValue;
      if (isJsonObject(parsed)) {
        this.original = parsed;
        this.doc = parsed;
      }
    } catch {
      // Not JSON: leave the annotation alone rather than fail the request.
    }
  }

  /** Writes the patched annotation into `final` (copying its metadata) when the rules changed it. */
  writeTo(final: JsonObject): void {
    if (this.doc === undefined || this.original === undefined || this.doc === this.original) return;
    if (jsonEqual(this.doc, this.original)) return;
    const meta = final.metadata;
    if (!isJsonObject(meta) || !isJsonObject(meta.annotations)) return;
    // final shares its metadata with the request's object: write into copies.
    // kubectl writes the annotation as compact JSON with sorted keys and a trailing newline.
    final.metadata = {
      ...meta,
      annotations: { ...meta.annotations, [LAST_APPLIED_ANNOTATION]: stableStringify(this.doc) + '\n' },
    };
  }
}
