import {
  effectiveTag,
  ImageReference,
  ImageReferenceError,
  parseImageReference,
  withRegistry,
} from '../util/image-reference';
import { FunctionError } from './errors';
import { def, FuncDef } from './registry';
import { GoValue } from './values';

/*
 * Beyond Sprig: container image references as the runtimes read them (util/image-reference.ts). Each takes the
 * reference last, so it pipes: `{{ .SelectedItem | imageRegistry }}`. A text that is not a reference fails the call
 * (and so the rule, reported), rather than printing a guess.
 */

function parts(v: GoValue): ImageReference {
  try {
    return parseImageReference(v as string);
  } catch (err) {
    if (err instanceof ImageReferenceError) throw new FunctionError(err.message);
    throw err;
  }
}

/** imageRegistry, imageRepository, imageTag, imageDigest and imageWithRegistry. */
export const IMAGE_FUNCTIONS: Record<string, FuncDef> = {
  imageRegistry: def(['string'], (_c, image) => parts(image).registry),
  imageRepository: def(['string'], (_c, image) => parts(image).repository),
  imageTag: def(['string'], (_c, image) => effectiveTag(parts(image))),
  imageDigest: def(['string'], (_c, image) => parts(image).digest),
  imageWithRegistry: def(['string', 'string'], (_c, registry, image) => {
    try {
      return withRegistry(registry as string, image as string);
    } catch (err) {
      if (err instanceof ImageReferenceError) throw new FunctionError(err.message);
      throw err;
    }
  }),
};
