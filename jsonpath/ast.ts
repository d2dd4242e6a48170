import { JsonValue } from '../util/json';

/** A parsed select: a path or an expression built from paths, literals, operators and function calls. */
export type JsonPathNode = PathNode | LiteralNode | ArrayNode | UnaryNode | BinaryNode | CallNode;

/** `$...` (from the root) or `@...` (from the current filter element). */
export interface PathNode {
  readonly kind: 'path';
  readonly root: '$' | '@';
  readonly segments: readonly Segment[];
  readonly column: number;
}

/** A string, number, boolean or null literal. */
export interface LiteralNode {
  readonly kind: 'literal';
  readonly value: JsonValue;
  readonly column: number;
}

/** A JSON array literal such as `["a", "b"]` (gval's JSON extension), mostly for `in`. */
export interface ArrayNode {
  readonly kind: 'array';
  readonly items: readonly JsonPathNode[];
  readonly column: number;
}

export type UnaryOperator = '!' | '-';
export interface UnaryNode {
  readonly kind: 'unary';
  readonly op: UnaryOperator;
  readonly operand: JsonPathNode;
  readonly column: number;
}

export type BinaryOperator =
  '||' | '&&' | '==' | '!=' | '<' | '<=' | '>' | '>=' | '=~' | '!~' | 'in' | '+' | '-' | '*' | '/' | '%';
export interface BinaryNode {
  readonly kind: 'binary';
  readonly op: BinaryOperator;
  readonly left: JsonPathNode;
  readonly right: JsonPathNode;
  readonly column: number;
}

export type FunctionName =
  'isDefined' | 'isUndefined' | 'isEmpty' | 'isNotEmpty' | 'length' | ImageFunctionName;

/** Beyond KubeMod: the parts of a container image reference (util/image-reference.ts). */
export type ImageFunctionName = 'imageRegistry' | 'imageRepository' | 'imageTag' | 'imageDigest';

/** The image functions, by name. */
export const IMAGE_FUNCTIONS: ReadonlySet<string> = new Set<ImageFunctionName>([
  'imageRegistry',
  'imageRepository',
  'imageTag',
  'imageDigest',
]);
export interface CallNode {
  readonly kind: 'call';
  readonly name: FunctionName;
  readonly args: readonly JsonPathNode[];
  readonly column: number;
}

/** One step of a path. `descent` (`..`) is always followed by the segment it applies to. */
export type Segment =
  | { readonly type: 'name'; readonly name: string } // .name, ['name']
  | { readonly type: 'index'; readonly index: number } // [n], negative counts from the end
  | { readonly type: 'key'; readonly key: JsonPathNode } // [expr]: key computed per element
  | { readonly type: 'wildcard' } // .* [*]
  | { readonly type: 'descent' } // ..
  | { readonly type: 'union'; readonly keys: readonly (string | number)[] } // [a,b] ['x','y']
  | {
      readonly type: 'slice';
      readonly start: number | null;
      readonly end: number | null;
      readonly step: number | null;
    }
  | { readonly type: 'filter'; readonly predicate: JsonPathNode } // [? expr] [?(expr)]
  | { readonly type: 'script'; readonly script: JsonPathNode }; // (expr): the value becomes expr with @ = value

/** Segments that can yield several values and capture an index each. */
export function isAmbiguous(s: Segment): boolean {
  return (
    s.type === 'wildcard' ||
    s.type === 'descent' ||
    s.type === 'union' ||
    s.type === 'slice' ||
    s.type === 'filter'
  );
}
