import { analyzeModRule } from './compile';
import { ValidationProblem } from './problems';

/** Every problem with a ModRule (empty when it is valid); never throws. */
export function validateModRule(obj: unknown): ValidationProblem[] {
  return analyzeModRule(obj).problems;
}
