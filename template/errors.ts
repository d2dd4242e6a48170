/** A template that cannot be parsed; line and column are 1-based. */
export class TemplateSyntaxError extends Error {
  constructor(
    message: string,
    readonly line: number,
    readonly column: number,
    readonly templateName = 'template',
  ) {
    super(`template: ${templateName}:${line}:${column}: ${message}`);
    this.name = 'TemplateSyntaxError';
  }
}

/** A failure while rendering (bad argument, index out of range, a limit exceeded). */
export class TemplateRuntimeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TemplateRuntimeError';
  }
}

/** Thrown by functions; the evaluator wraps it as `error calling NAME: ...`. */
export class FunctionError extends Error {}
