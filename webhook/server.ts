import { IncomingMessage, ServerResponse } from 'node:http';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { AdmissionApiVersion, AdmissionRequest } from './admission';
import { JsonObject } from '../util/json';
import { RuleSnapshot } from '../store/rules';
import { DEFAULT_BUDGET } from '../util/budget';
import { RuleRef } from '../engine/admit';
import { AdmissionResult, EndpointDecision, failOpenResponse } from './answer';
import { DragnetDecision, handleDragnet, rejectionLogFields, storeNamespace } from './dragnet';
import { ruleName } from '../engine/rejection';
import { DemotionReason, NamespaceFairness } from './fairness';
import { createHealthServer } from './health';
import { DEFAULT_MAX_BODY_BYTES } from '../util/body-limit';
import { isJsonContentType, readBody, sendJson, sendText } from './http';
import { WebhookMetrics } from './metrics';
import { AnswerMetrics } from './answer-metrics';
import { handleMutateModRule } from './modrule';
import { handlePeerNotice, PEER_PATH } from './peer';
import { handleDragnetProbe } from './probe';
import { answerValidateModRule } from './rule-admission';
import { holdBudgetMs, within } from './hold';
import { referencesPending } from './references';
import { handlePodBinding, PodBindingEvent } from './podbinding';
import { RuleQuarantine, watchQuarantine } from './quarantine';
import { RuleFailures } from './rule-failures';
import { BadRequestError, encodeReview, parseAdmissionReview } from './review';
import { closeServer, createAdmissionServer, HTTP_TIMEOUTS, listen, timeoutsOf, urlHost } from './listener';
import { RunningWebhook, WebhookServerOptions } from './server-options';

export { HTTP_TIMEOUTS } from './listener';
export type { NamespaceDemotion, RunningWebhook, WebhookServerOptions } from './server-options';

/** Paths the API server calls, as the webhook configurations name them. */
export const WEBHOOK_PATHS = {
  dragnet: '/dragnet-webhook',
  validateModRule: '/validate-api-kubemod-io-v1beta1-modrule',
  mutateModRule: '/mutate-api-kubemod-io-v1beta1-modrule',
  podBinding: '/podbinding-webhook',
  dragnetProbe: '/dragnet-probe',
} as const;

type Endpoint = 'dragnet' | 'validate-modrule' | 'mutate-modrule' | 'podbinding' | 'dragnet-probe';

const ROUTES: ReadonlyMap<string, Endpoint> = new Map([
  [WEBHOOK_PATHS.dragnet, 'dragnet'],
  [WEBHOOK_PATHS.validateModRule, 'validate-modrule'],
  [WEBHOOK_PATHS.mutateModRule, 'mutate-modrule'],
  [WEBHOOK_PATHS.podBinding, 'podbinding'],
  [WEBHOOK_PATHS.dragnetProbe, 'dragnet-probe'],
]);

interface ObjectRef {
  kind: string;
  namespace: string;
  name: string;
}

function objectRef(request: AdmissionRequest): ObjectRef {
  const obj = request.object ?? request.oldObject ?? null;
  const meta = (obj?.metadata ?? {}) as JsonObject;
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  return {
    kind: request.kind?.kind ?? str(obj?.kind),
    namespace: request.namespace ?? str(meta.namespace),
    name: request.name || str(meta.name) || str(meta.generateName),
  };
}

/** "ConfigMap team/web (CREATE)": the object a rule failed on, as the rule's status names it. */
function objectLabel(request: AdmissionRequest): string {
  const { kind, namespace, name } = objectRef(request);
  return `${kind} ${namespace ? `${namespace}/` : ''}${name || '(unnamed)'} (${request.operation})`;
}

/** Starts the HTTPS admission server and the plain-HTTP health server; used by the operator and `serve --local`. */
export async function startWebhookServer(options: WebhookServerOptions): Promise<RunningWebhook> {
  const { store, logger } = options;
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const registry = options.registry ?? new Registry();
  if (options.processMetrics) collectDefaultMetrics({ register: registry, prefix: 'modrule_' });
  const fairness = new NamespaceFairness({ ...options.fairness, budget: options.budget ?? DEFAULT_BUDGET });
  const metrics = new WebhookMetrics(registry, store, () => fairness.demotedCount());
  const answers = new AnswerMetrics(registry);
  const ownQuarantine = !(options.quarantine instanceof RuleQuarantine);
  const quarantine =
    options.quarantine instanceof RuleQuarantine
      ? options.quarantine
      : new RuleQuarantine(options.quarantine, store);
  const unwatchQuarantine = watchQuarantine(quarantine, registry, logger);
  const failures = options.failures ?? new RuleFailures({}, store);
  let closing = false;
  let loaded = !options.rulesLoaded;
  void options.rulesLoaded?.then(() => (loaded = true));

  const dispatchPodBinding = (event: PodBindingEvent): void => {
    const callback = options.onPodBinding;
    if (!callback) return;
    // Not awaited: the API server must not wait on our follow-up pod update.
    setImmediate(() => {
      Promise.resolve()
        .then(() => callback(event))
        .catch((err: Error) =>
          logger.error('pod binding handler failed', {
            pod: { namespace: event.namespace, name: event.podName },
            node: event.nodeName,
            error: err?.message,
            stack: err?.stack,
          }),
        );
    });
  };

  const notifyDemotion = (namespace: string, reason: DemotionReason, decision: DragnetDecision): void => {
    const callback = options.onDemotion;
    if (!callback) return;
    const outcome = decision.outcome;
    const seen = new Set<string>();
    const rules: RuleRef[] = [];
    for (const ref of [...(outcome?.matched ?? []), ...(outcome?.failures ?? []).map((f) => f.rule)]) {
      if (ref.namespace !== namespace || seen.has(ref.name)) continue;
      seen.add(ref.name);
      rules.push(ref);
    }
    Promise.resolve()
      .then(() => callback({ namespace, reason, rules }))
      .catch((err: Error) => logger.error('demotion handler failed', { namespace, error: err?.message }));
  };

  // The dragnet's evaluation runs under the namespace's budget; a demoted namespace's requests wait their turn.
  const answerDragnet = async (request: AdmissionRequest, url?: string): Promise<DragnetDecision> => {
    const namespace = storeNamespace(request, request.object ?? request.oldObject ?? null) ?? '';
    const fresh = options.storeFreshness?.until(namespace, holdBudgetMs(url));
    if (fresh) await fresh;
    let snapshot: RuleSnapshot | undefined;
    const run = await fairness.run(namespace, (budget) =>
      handleDragnet(request, (snapshot = store.snapshot()), budget, {
        quarantined: quarantine.gate(),
        recordPatchedBy: options.recordPatchedBy,
        references: options.references?.reader,
      }),
    );
    const decision = run.value;
    if (decision.error) answers.failedOpen('dragnet', 'engine_error');
    if (decision.outcome && snapshot) quarantine.record(decision.outcome, snapshot);
    logDragnet(request, decision);
    if (run.budget.exhausted) {
      metrics.budgetExhausted.inc({ namespace });
      logger.warn('request budget exhausted; remaining ModRules skipped', {
        object: objectRef(request),
        operation: request.operation,
        uid: request.uid,
        reason: run.budget.exhausted,
        demoted: run.demoted,
      });
    }
    if (run.demotion) {
      metrics.demotions.inc({ namespace, reason: run.demotion });
      if (!run.demoted) {
        // Logged once per demotion (renewals while demoted are counted, not logged).
        logger.warn('namespace demoted: its requests now get a small budget and wait their turn', {
          namespace,
          reason: run.demotion,
          ms: Math.round(run.ms * 1000) / 1000,
          budget: fairness.demotedBudget,
        });
        notifyDemotion(namespace, run.demotion, decision);
      }
    }
    return decision;
  };

  const answer = (
    endpoint: Exclude<Endpoint, 'dragnet' | 'validate-modrule'>,
    request: AdmissionRequest,
  ): EndpointDecision => {
    switch (endpoint) {
      case 'dragnet-probe':
        return handleDragnetProbe(request);
      case 'mutate-modrule':
        return handleMutateModRule(request);
      case 'podbinding': {
        const decision = handlePodBinding(request);
        if (decision.event) dispatchPodBinding(decision.event);
        else logger.debug('pod binding skipped', { uid: request.uid, reason: decision.skipped });
        return decision;
      }
    }
  };

  const logDragnet = (request: AdmissionRequest, decision: DragnetDecision): void => {
    const base = { object: objectRef(request), operation: request.operation, uid: request.uid };
    const outcome = decision.outcome;
    if (decision.error) {
      logger.error('admission evaluation failed; allowed unchanged', {
        ...base,
        error: decision.error.message,
        stack: decision.error.stack,
      });
      return;
    }
    if (!outcome) return;
    // One line however many rules failed: a request that ran out of budget can fail hundreds at once.
    if (outcome.failures.length > 0) {
      logger.warn('ModRules failed at run time and were skipped', {
        ...base,
        failures: outcome.failures.map((f) => ({ rule: ruleName(f.rule), error: f.message })),
      });
      failures.record(outcome.failures, () => objectLabel(request));
    }
    metrics.countRules(
      'error',
      outcome.failures.map((f) => f.rule),
    );
    // One info line per admission that changed or rejected something, listing the rules; per-rule detail at debug.
    if (decision.result === 'rejected') {
      logger.info('rejected', { ...base, ...rejectionLogFields(outcome) });
      metrics.countRules(
        'rejection',
        outcome.rejections.map((r) => r.rule),
      );
    } else if (decision.result === 'patched') {
      logger.info('patch applied', { ...base, rules: decision.applied.map(ruleName) });
      if (logger.isDebugEnabled()) {
        for (const rule of decision.applied) logger.debug('patched', { ...base, rule });
        // A patch holding a value read from a Secret is not logged, even at debug.
        if (!outcome.secretValues) logger.debug('patch', { ...base, patch: outcome.patch });
      }
      metrics.countRules('patch', decision.applied);
    }
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const started = process.hrtime.bigint();
    const path = (req.url ?? '/').split('?')[0];
    const endpoint = ROUTES.get(path);
    let operation = '';
    const finish = (result: AdmissionResult, send: () => void) => {
      if (closing) res.setHeader('Connection', 'close');
      send();
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      metrics.observe(endpoint ?? 'unknown', operation, result, seconds);
      if (logger.isDebugEnabled()) {
        logger.debug('admission request', { path, operation, result, ms: Math.round(seconds * 1e6) / 1e3 });
      }
    };
    const fail = (status: number, message: string, headers: Record<string, string> = {}) => {
      logger.warn('bad admission request', { path, method: req.method, status, reason: message });
      if (status === 413) headers.Connection = 'close';
      finish('bad_request', () => sendText(res, status, message, headers));
    };

    if (path === PEER_PATH && options.peer && req.method === 'POST')
      return handlePeerNotice(req, res, options.peer);
    if (!endpoint) {
      fail(404, `not found: ${path} (endpoints: ${[...ROUTES.keys()].join(', ')})`);
      req.resume();
      return;
    }
    if (req.method !== 'POST') {
      fail(405, `method ${req.method} not allowed; admission reviews are POSTed`, { Allow: 'POST' });
      req.resume();
      return;
    }
    if (!isJsonContentType(req.headers['content-type'])) {
      fail(415, `content type must be application/json, got ${req.headers['content-type'] ?? 'none'}`);
      req.resume();
      return;
    }
    let request: AdmissionRequest;
    let apiVersion: AdmissionApiVersion;
    try {
      const parsed = parseAdmissionReview(await readBody(req, maxBodyBytes));
      request = parsed.request;
      apiVersion = parsed.apiVersion;
      operation = request.operation;
      answers.called(endpoint, req.url);
    } catch (err) {
      if (err instanceof BadRequestError) return fail(err.status, err.message);
      throw err;
    }
    if (endpoint === 'dragnet' && !loaded && !(await within(options.rulesLoaded!, holdBudgetMs(req.url)))) {
      logger.warn('rules not loaded yet; left to the webhook failurePolicy', {
        object: objectRef(request),
        operation,
        uid: request.uid,
      });
      answers.failedOpen(endpoint, 'rules_not_loaded');
      finish('error', () => sendText(res, 503, 'modrule: rules not loaded yet', { 'Retry-After': '1' }));
      return;
    }
    const references =
      endpoint === 'dragnet' ? referencesPending(options.references, store.snapshot(), request) : undefined;
    if (references && !(await within(references, holdBudgetMs(req.url)))) {
      logger.warn('objects the rules read are not in the caches yet; left to the webhook failurePolicy', {
        object: objectRef(request),
        operation,
        uid: request.uid,
      });
      answers.failedOpen(endpoint, 'references_not_synced');
      finish('error', () => sendText(res, 503, 'modrule: references not synced yet', { 'Retry-After': '1' }));
      return;
    }
    let decision: EndpointDecision;
    try {
      decision =
        endpoint === 'dragnet'
          ? await answerDragnet(request, req.url)
          : endpoint === 'validate-modrule'
            ? await answerValidateModRule(request, req.url, {
                clusterNamespace: store.snapshot().clusterNamespace,
                servedKinds: options.servedKinds,
                allowSecrets: store.referencePolicy.allowSecrets,
                hook: options.ruleAdmission,
                logger,
              })
            : answer(endpoint, request);
    } catch (err) {
      if (err instanceof BadRequestError) return fail(err.status, err.message);
      // Fail open like KubeMod: our bug must not block the cluster's writes.
      const error = err instanceof Error ? err : new Error(String(err));
      logger.error('admission handler failed; allowed unchanged', {
        endpoint,
        object: objectRef(request),
        operation,
        uid: request.uid,
        error: error.message,
        stack: error.stack,
      });
      decision = { response: failOpenResponse(request.uid, error), result: 'error' };
      answers.failedOpen(endpoint, 'handler_error');
    }
    finish(decision.result, () => sendJson(res, 200, encodeReview(apiVersion, decision.response)));
  };

  const timeouts = {
    headersMs: options.headersTimeoutMs ?? HTTP_TIMEOUTS.headersMs,
    requestMs: options.requestTimeoutMs ?? HTTP_TIMEOUTS.requestMs,
  };
  const { server, unsubscribeTls } = createAdmissionServer(
    options.tls,
    timeouts,
    (req: IncomingMessage, res: ServerResponse) => {
      handle(req, res).catch((err: Error) => {
        logger.error('webhook request failed', { error: err.message, stack: err.stack });
        if (!res.headersSent) sendText(res, 500, 'internal error');
        else res.destroy();
      });
    },
    logger,
  );

  const health = createHealthServer({
    port: options.healthPort,
    host: options.healthHost ?? options.host,
    registry,
    logger,
    isReady: () => !closing && server.listening && options.isReady(),
  });

  let port: number;
  let healthPort: number;
  try {
    port = await listen(server, options.port, options.host);
    healthPort = await listen(health, options.healthPort, options.healthHost ?? options.host);
  } catch (err) {
    unsubscribeTls();
    metrics.close();
    await Promise.all([closeServer(server, 0), closeServer(health, 0)]);
    throw err;
  }
  const closeTimeoutMs = options.closeTimeoutMs ?? 10_000;
  let closed: Promise<void> | null = null;
  return {
    url: `https://${urlHost(options.host)}:${port}`,
    healthUrl: `http://${urlHost(options.healthHost ?? options.host)}:${healthPort}`,
    port,
    healthPort,
    registry,
    httpTimeouts: timeoutsOf(server),
    close: () => {
      if (!closed) {
        closing = true;
        closed = Promise.all([closeServer(server, closeTimeoutMs), closeServer(health, closeTimeoutMs)]).then(
          () => {
            unsubscribeTls();
            metrics.close();
            unwatchQuarantine();
            if (ownQuarantine) quarantine.close();
            if (!options.failures) failures.close();
          },
        );
      }
      return closed;
    },
  };
}
