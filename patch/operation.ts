import { JsonValue } from '../util/json';

/** One RFC 6902 JSON Patch operation. */
export type JsonPatchOperation =
  | { op: 'add'; path: string; value: JsonValue }
  | { op: 'remove'; path: string }
  | { op: 'replace'; path: string; value: JsonValue }
  | { op: 'move'; from: string; path: string }
  | { op: 'copy'; from: string; path: string }
  | { op: 'test'; path: string; value: JsonValue };

/** A patch or pointer that cannot be applied; path names the offending location. */
export class PatchError extends Error {
  readonly path: string;
  /** Index of the failing operation within a patch, when applying a whole patch. */
  readonly opIndex: number | undefined;

  constructor(message: string, path: string, opIndex?: number) {
    super(message);
    this.name = 'PatchError';
    this.path = path;
    this.opIndex = opIndex;
  }
}
