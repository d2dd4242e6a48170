import { AdmissionApiVersion, AdmissionRequest, AdmissionResponse, AdmissionReview } from './admission';
import { isJsonObject, JsonObject, JsonValue } from '../util/json';
import { messageOf } from '../util/errors';

/** A request the server cannot answer with an AdmissionReview: becomes an HTTP error status with a reason. */
export class BadRequestError extends Error {
  constructor(
    message: string,
    readonly status = 400,
  ) {
    super(message);
    this.name = 'BadRequestError';
  }
}

/** A parsed, shape-checked AdmissionReview request. */
export interface ParsedReview {
  apiVersion: AdmissionApiVersion;
  request: AdmissionRequest;
}

const API_VERSIONS: readonly string[] = ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'];
const OPERATIONS: readonly string[] = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'];
const OBJECT_FIELDS = ['object', 'oldObject'] as const;
const STRING_FIELDS = ['namespace', 'name', 'subResource'] as const;

/** Parses and checks the body of an AdmissionReview POST; throws BadRequestError naming what is wrong. */
export function parseAdmissionReview(body: string): ParsedReview {
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch (err) {
    throw new BadRequestError(`body is not valid JSON: ${messageOf(err)}`);
  }
  if (!isJsonObject(doc)) throw new BadRequestError('body must be a JSON object (an AdmissionReview)');
  if (doc.kind !== 'AdmissionReview') {
    throw new BadRequestError(`kind must be "AdmissionReview", got ${describe(doc.kind)}`);
  }
  if (typeof doc.apiVersion !== 'string' || !API_VERSIONS.includes(doc.apiVersion)) {
    throw new BadRequestError(
      `apiVersion must be one of ${API_VERSIONS.join(', ')}, got ${describe(doc.apiVersion)}`,
    );
  }
  const request = doc.request;
  if (!isJsonObject(request)) throw new BadRequestError('request is missing or not an object');
  checkRequest(request);
  return {
    apiVersion: doc.apiVersion as AdmissionApiVersion,
    request: request as unknown as AdmissionRequest,
  };
}

/** Checks the fields of `request` an AdmissionRequest must have, and the types of those it may have. */
function checkRequest(request: JsonObject): void {
  if (typeof request.uid !== 'string' || request.uid === '') {
    throw new BadRequestError('request.uid is missing or not a non-empty string');
  }
  if (typeof request.operation !== 'string' || !OPERATIONS.includes(request.operation)) {
    throw new BadRequestError(
      `request.operation must be one of ${OPERATIONS.join(', ')}, got ${describe(request.operation)}`,
    );
  }
  for (const field of OBJECT_FIELDS) {
    const v = request[field];
    if (v !== undefined && v !== null && !isJsonObject(v)) {
      throw new BadRequestError(`request.${field} must be an object or null, got ${describe(v)}`);
    }
  }
  for (const field of STRING_FIELDS) {
    const v = request[field];
    if (v !== undefined && v !== null && typeof v !== 'string') {
      throw new BadRequestError(`request.${field} must be a string, got ${describe(v)}`);
    }
  }
  if (request.kind !== undefined && !isJsonObject(request.kind)) {
    throw new BadRequestError(`request.kind must be an object, got ${describe(request.kind)}`);
  }
  if (request.resource !== undefined && !isJsonObject(request.resource)) {
    throw new BadRequestError(`request.resource must be an object, got ${describe(request.resource)}`);
  }
  if (request.dryRun !== undefined && request.dryRun !== null && typeof request.dryRun !== 'boolean') {
    throw new BadRequestError(`request.dryRun must be a boolean, got ${describe(request.dryRun)}`);
  }
}

function describe(v: JsonValue | undefined): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  const s = JSON.stringify(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/** Wraps a response in an AdmissionReview of the version the API server asked in. */
export function reviewResponse(
  apiVersion: AdmissionApiVersion,
  response: AdmissionResponse,
): AdmissionReview {
  return { apiVersion, kind: 'AdmissionReview', response };
}

/** An allowed response without a patch. */
export function allowResponse(uid: string): AdmissionResponse {
  return { uid, allowed: true };
}

/** A denied response; code 403 Forbidden for policy rejections, 422 Invalid for invalid objects. */
export function denyResponse(uid: string, code: number, reason: string, message: string): AdmissionResponse {
  return { uid, allowed: false, status: { status: 'Failure', code, reason, message } };
}

// The base64 patches patchResponse made, by response: encodeReview writes those without JSON.stringify, which scans
// every character of a string for escapes (~19 us for a 7 KB patch, more than applying the rules' patches).
const base64Patches = new WeakMap<AdmissionResponse, string>();

/** An allowed response carrying a JSON patch (base64 as the API requires); no patch fields when empty. */
export function patchResponse(uid: string, patch: readonly unknown[]): AdmissionResponse {
  if (patch.length === 0) return allowResponse(uid);
  const encoded = Buffer.from(JSON.stringify(patch), 'utf8').toString('base64');
  const response: AdmissionResponse = { uid, allowed: true, patchType: 'JSONPatch', patch: encoded };
  base64Patches.set(response, encoded);
  return response;
}

const CLOSE_PATCH = Buffer.from('"}}', 'latin1');

/** The HTTP body answering an AdmissionReview: the response wrapped in a review of the version asked in, as JSON. */
export function encodeReview(apiVersion: AdmissionApiVersion, response: AdmissionResponse): Buffer {
  const patch = response.patch;
  // Only a patch patchResponse made (and nobody changed since) is known to be base64, which JSON needs no escape for.
  if (patch === undefined || base64Patches.get(response) !== patch) {
    return Buffer.from(JSON.stringify(reviewResponse(apiVersion, response)), 'utf8');
  }
  const { patch: _patch, ...rest } = response;
  const head = JSON.stringify(reviewResponse(apiVersion, rest));
  // head ends with the closing braces of response and review: the patch goes in as the response's last field.
  return Buffer.concat([
    Buffer.from(`${head.slice(0, -2)},"patch":"`, 'utf8'),
    Buffer.from(patch, 'latin1'),
    CLOSE_PATCH,
  ]);
}

/** The object the request is about: the new object, or the old one for DELETE. */
export function subjectObject(request: AdmissionRequest): JsonObject | null {
  return request.object ?? request.oldObject ?? null;
}
