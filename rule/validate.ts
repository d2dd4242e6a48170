import { analyzeModRule } from './compile';
import { ValidationProblem } from './problems';
import { ReferencePolicy } from './references';

/**
 * Every problem with a ModRule (empty when it is valid); never throws. `references` says where cluster-wide rules
 * live and whether Secrets may be referenced (default: kubemod-system, no Secrets).
 */
export function validateModRule(obj: unknown, references?: ReferencePolicy): ValidationProblem[] {
  return analyzeModRule(obj, { references }).problems;
}
