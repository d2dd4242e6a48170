/** One thing wrong with a ModRule, with the field it is about (e.g. 'spec.match[1].matchRegex'). */
export interface ValidationProblem {
  field: string;
  message: string;
}

/** One line for logs, statuses and admission responses: "field: message; field: message". */
export function formatProblems(problems: readonly ValidationProblem[]): string {
  return problems.map((p) => (p.field ? `${p.field}: ${p.message}` : p.message)).join('; ');
}
