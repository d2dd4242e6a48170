import { isJsonObject, JsonObject, JsonValue } from '../../util/json';
import { PROBE_ANNOTATION } from '../../native/probe';
import { HttpError } from './fake-http';
import { FakeResource } from './fake-resources';
import { FakeStore, meta } from './fake-store';

/*
 * The fake's stand-in for the API server's admission policy plugins. It evaluates no CEL (what a policy does to real
 * objects is only ever checked on the real control plane): it answers the operator's probe alone (native/probe.ts),
 * a create of an Event annotated native.modrule.io/probe=<policy>, the way the policy stored under that name answers
 * it: a mutating policy adds the annotation its spec's probe mark writes; a validating one refuses with its spec's
 * probe message. A policy runs only with a binding that names it, and only while `running`; while `frozen`, the
 * policies and bindings as they were when frozen run (an API server whose caches have not caught up yet).
 */

// The probe branch of a mutating policy's jsonPatch, and of a validating policy's messageExpression.
const MARK = /\? \[JSONPatch\{op: "add", path: "\/metadata\/annotations\/([^"]+)", value: "([^"]*)"\}\] :/;
const MESSAGE = /\? "(native probe [^"]*)" :/;

const KINDS = {
  MutatingAdmissionPolicy: ['mutatingadmissionpolicies', 'mutatingadmissionpolicybindings'],
  ValidatingAdmissionPolicy: ['validatingadmissionpolicies', 'validatingadmissionpolicybindings'],
} as const satisfies Record<string, readonly [FakeResource, FakeResource]>;

/** The admission policies of a FakeApiServer, as far as the operator's probes see them. */
export class FakeAdmission {
  /** Whether stored policies run; false: an API server whose admission caches have not loaded them yet. */
  running = true;
  private frozen: Map<FakeResource, JsonObject[]> | null = null;

  constructor(private readonly store: FakeStore) {}

  /** From now, probes are answered by the policies and bindings stored now, whatever is written later. */
  freeze(): void {
    const all = Object.values(KINDS).flat();
    this.frozen = new Map(all.map((resource) => [resource, this.store.list(resource)]));
  }

  /** Probes are answered by what is stored again. */
  thaw(): void {
    this.frozen = null;
  }

  private list(resource: FakeResource): JsonObject[] {
    return this.frozen?.get(resource) ?? this.store.list(resource);
  }

  /** The object as admission leaves it, on create; throws the refusal (422) of a validating policy. */
  admit(resource: FakeResource, obj: JsonObject): JsonObject {
    const annotations = meta(obj).annotations;
    const probed = isJsonObject(annotations) ? annotations[PROBE_ANNOTATION] : undefined;
    if (resource !== 'events' || typeof probed !== 'string' || !this.running) return obj;
    for (const [kind, [policies, bindings]] of Object.entries(KINDS)) {
      const policy = this.list(policies).find((p) => meta(p).name === probed);
      const bound = this.list(bindings).some((b) => isJsonObject(b.spec) && b.spec.policyName === probed);
      if (!policy || !bound) continue;
      if (kind === 'MutatingAdmissionPolicy')
        this.mark(obj, texts(policy, 'mutations', ['jsonPatch', 'expression']));
      else this.refuse(probed, texts(policy, 'validations', ['messageExpression']));
    }
    return obj;
  }

  private mark(obj: JsonObject, patches: string[]): void {
    for (const found of patches.map((e) => MARK.exec(e))) {
      if (!found) continue;
      const m = meta(obj);
      const annotations = isJsonObject(m.annotations) ? m.annotations : {};
      m.annotations = { ...annotations, [found[1].replace('~1', '/')]: found[2] };
    }
  }

  private refuse(policy: string, messages: string[]): void {
    const found = messages.map((e) => MESSAGE.exec(e)).find((m) => m !== null);
    if (found)
      throw new HttpError(
        422,
        'Invalid',
        `ValidatingAdmissionPolicy '${policy}' with binding '${policy}' denied request: ${found[1]}`,
      );
  }
}

/** The strings at `path` in each item of the policy's spec list `list` (the CEL of its mutations or validations). */
function texts(policy: JsonObject, list: string, path: string[]): string[] {
  const spec = isJsonObject(policy.spec) ? policy.spec : {};
  const items = Array.isArray(spec[list]) ? spec[list] : [];
  return items.flatMap((item) => {
    const text = path.reduce<JsonValue | undefined>((at, k) => (isJsonObject(at) ? at[k] : undefined), item);
    return typeof text === 'string' ? [text] : [];
  });
}
