import { AdmissionRequest } from './admission';
import { JsonObject } from '../util/json';
import { metaString } from '../util/meta';
import { storeNamespace } from './dragnet';
import { holdBudgetMs } from './hold';
import { subjectObject } from './review';
import type { Endpoint } from './endpoints';

/** The object a request is about, as logs and rule statuses name it. */
export interface ObjectRef {
  kind: string;
  namespace: string;
  name: string;
}

/** The fields every log line about one request carries. */
export interface RequestLogFields {
  object: ObjectRef;
  operation: string;
  uid: string;
}

/**
 * One admission request and what is derived from it, each computed once and only when first asked for: most requests
 * never log, so the object reference and the log fields are not built for them.
 */
export class RequestContext {
  private namespaceMemo: string | null | undefined;
  private holdUntilMemo: number | undefined;
  private logFieldsMemo: RequestLogFields | undefined;

  constructor(
    readonly request: AdmissionRequest,
    readonly endpoint: Endpoint,
    /** The URL the API server called, with its `?timeout=`. */
    readonly url: string | undefined,
  ) {}

  /** The request's object: the new one, or the old one for DELETE. */
  get subject(): JsonObject | null {
    return subjectObject(this.request);
  }

  /** The namespace the rule store is asked about: null for cluster-scoped objects (Namespaces included). */
  get namespace(): string | null {
    if (this.namespaceMemo === undefined) this.namespaceMemo = storeNamespace(this.request, this.subject);
    return this.namespaceMemo;
  }

  /**
   * How long the request may still be held before it must be answered: the holds share one budget, the API server's
   * timeout less a margin, counted from the first hold that asks.
   */
  get holdMs(): number {
    if (this.holdUntilMemo === undefined) this.holdUntilMemo = Date.now() + holdBudgetMs(this.url);
    return Math.max(0, this.holdUntilMemo - Date.now());
  }

  /** `{object, operation, uid}`: spread it into a log line's fields. */
  get logFields(): RequestLogFields {
    if (!this.logFieldsMemo) {
      const { operation, uid } = this.request;
      this.logFieldsMemo = { object: objectRef(this.request), operation, uid };
    }
    return this.logFieldsMemo;
  }

  /** "ConfigMap team/web (CREATE)": the object a rule failed on, as the rule's status names it. */
  get label(): string {
    const { kind, namespace, name } = this.logFields.object;
    return `${kind} ${namespace ? `${namespace}/` : ''}${name || '(unnamed)'} (${this.request.operation})`;
  }
}

/** The object a request is about: the request's kind, namespace and name, else its object's. */
export function objectRef(request: AdmissionRequest): ObjectRef {
  const obj = subjectObject(request);
  return {
    kind: request.kind?.kind ?? (typeof obj?.kind === 'string' ? obj.kind : ''),
    namespace: request.namespace ?? metaString(obj, 'namespace'),
    name: request.name || metaString(obj, 'name') || metaString(obj, 'generateName'),
  };
}
