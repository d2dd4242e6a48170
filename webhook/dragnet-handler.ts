import type { ReferenceSource } from '../store/references';
import { RuleSnapshot, RuleStore } from '../store/rules';
import { RequestBudget } from '../util/budget';
import { RequestContext } from './context';
import { DragnetDecision, handleDragnet } from './dragnet';
import { FairRun, NamespaceFairness } from './fairness';
import { Handler, Wrapper } from './handler';
import { RuleQuarantine } from './quarantine';

/** A dragnet decision and how it was reached: the snapshot it read, and its run under the namespace's fairness. */
export interface DragnetAnswer extends DragnetDecision {
  snapshot: RuleSnapshot;
  fair?: FairRun<unknown>;
}

/** The dragnet's evaluation of one request within `budget`: synchronous, so that fairness times just it. */
export type Evaluation = (context: RequestContext, budget: RequestBudget) => DragnetAnswer;

/** What the evaluation reads besides the request. */
export interface EvaluationSources {
  store: RuleStore;
  quarantine: RuleQuarantine;
  references?: ReferenceSource;
  recordPatchedBy?: boolean;
}

/** The dragnet's core: the request against the store's current snapshot, the quarantined rules skipped. */
export function evaluation(sources: EvaluationSources): Evaluation {
  const { store, quarantine } = sources;
  return (context, budget) => {
    const snapshot = store.snapshot();
    const decision = handleDragnet(
      context.request,
      snapshot,
      budget,
      {
        quarantined: quarantine.gate(),
        recordPatchedBy: sources.recordPatchedBy,
        references: sources.references?.reader,
      },
      context.namespace,
    );
    return { ...decision, snapshot };
  };
}

/** Runs the evaluation under its namespace's budget; a demoted namespace's requests wait their turn. */
export function fairly(fairness: NamespaceFairness, evaluate: Evaluation): Handler<DragnetAnswer> {
  return async (context) => {
    const run = await fairness.run(context.namespace ?? '', (budget) => evaluate(context, budget));
    const answer = run.value;
    answer.fair = run;
    return answer;
  };
}

/** Books the rules that ran out of their own share of the budget (webhook/quarantine.ts). */
export function recordQuarantine(quarantine: RuleQuarantine): Wrapper<DragnetAnswer> {
  return (next) => async (context) => {
    const answer = await next(context);
    if (answer.outcome) quarantine.record(answer.outcome, answer.snapshot);
    return answer;
  };
}
