import { ServerResponse } from 'node:http';
import { cloneJson, isJsonObject, JsonObject, JsonValue } from '../../util/json';

/** An API error the fake answers with as a `Status` object. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/** Answers with a JSON body. */
export function sendJson(res: ServerResponse, status: number, body: JsonValue): void {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** Answers with a `Status` object, as the API server reports a failure. */
export function sendError(res: ServerResponse, err: HttpError): void {
  sendJson(res, err.status, {
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    reason: err.reason,
    message: err.message,
    code: err.status,
  });
}

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: JsonValue, patch: JsonValue): JsonValue {
  if (!isJsonObject(patch)) return cloneJson(patch);
  const out: JsonObject = isJsonObject(target) ? cloneJson(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k] ?? null, v);
  }
  return out;
}
