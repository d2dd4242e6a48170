/** A select that cannot be parsed; `column` is 1-based, `expected` says what would have been valid there. */
export class JsonPathSyntaxError extends Error {
  constructor(
    readonly column: number,
    readonly expected: string,
    found: string,
  ) {
    super(`column ${column}: expected ${expected} but found ${found}`);
    this.name = 'JsonPathSyntaxError';
  }
}

/** Thrown by select() when one evaluation exceeds its work budget (pathological select or object). */
export class JsonPathLimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JsonPathLimitError';
  }
}
