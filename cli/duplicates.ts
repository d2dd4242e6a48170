import { DuplicateKey, duplicateKeyMessage } from '../util/yaml-duplicates';
import { JsonObject } from '../util/json';
import { nameOf } from '../util/meta';
import { CommandIO } from './io';

// Keys given twice. In objects to admit (a chart's templates, manifests) the last one wins with a warning, as kubectl
// and Helm read them: a post-renderer or a check must not be stricter than the tools that install the objects. In
// ModRules and test suites it is an error: they are the user's own policy, kubectl would store the last value
// without a word, and the value lost may be the one that was meant (a second matchValue, a second select), so the
// offline checks are where it must surface.

/** One object read from a file, with the keys its document gives twice. */
export interface ReadObject {
  file: string;
  object: JsonObject;
  duplicates?: readonly DuplicateKey[];
}

/** Warns on stderr, once per key, about keys an object's document gives twice (the last one is what it holds). */
export function warnDuplicateKeys(objects: readonly ReadObject[], io: CommandIO): void {
  for (const { file, object, duplicates } of objects)
    for (const d of duplicates ?? []) {
      const what = `${String(object.kind ?? 'object')} ${nameOf(object) || '<unnamed>'}`;
      io.stderr(`warning: ${file}:${d.line}: document ${d.document} (${what}): ${duplicateKeyMessage(d)}\n`);
    }
}
