import { sleep } from '../kube/backoff';
import { OperatorConfig, OperatorDeps, RunningOperator } from './config';
import { Lifecycle } from './controller/lifecycle';
import { buildControllers } from './controllers';
import { buildServing } from './serving';
import { buildState } from './state';

export type { CertMode, OperatorConfig, OperatorDeps, RunningOperator } from './config';

/*
 * The composition root: the shared state first, then the controllers on it, then what serves; all of it started by
 * one Lifecycle in that order and stopped in the reverse one, by one exit path (a start-up that fails or is cancelled
 * stops what it started).
 */

/**
 * Runs the operator: rule store <- informers (ModRules, Namespaces, Nodes) with status write-back, the dragnet
 * scope, native policies, reference caches, certificates (self-managed or mounted), and the webhook server, which
 * stays unready until the first lists are in.
 */
export async function startOperator(config: OperatorConfig, deps: OperatorDeps): Promise<RunningOperator> {
  const { logger } = deps;
  let draining = false;
  const state = buildState(config, deps);
  const controllers = buildControllers(config, deps, state);
  const serving = buildServing(config, deps, state, controllers, () => draining);
  const life = new Lifecycle(logger).add('shared state', state.stopper);
  for (const [name, part] of [...controllers.parts, ...serving.parts]) life.add(name, part);
  void controllers.sync.synced.then(() =>
    logger.info('initial ModRules, Namespaces and Nodes loaded; ready'),
  );
  await life.start(deps.signal);

  let stopping: Promise<void> | null = null;
  const isReady = () => !draining && controllers.sync.isReady();
  return {
    store: state.store,
    native: controllers.native,
    webhook: serving.webhook(),
    caBundle: () => serving.certificates.caBundle(),
    isReady,
    stop: () => {
      stopping ??= (async () => {
        // Reported unready first, so that the API server stops routing here before the server closes.
        draining = true;
        if (config.shutdownDelayMs) await sleep(config.shutdownDelayMs);
        await life.stop();
        logger.info('operator stopped');
      })();
      return stopping;
    },
  };
}
