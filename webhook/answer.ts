import { ServerResponse } from 'node:http';
import { AdmissionApiVersion, AdmissionResponse } from './admission';
import { sendJson, sendText } from './http';
import { allowResponse, encodeReview } from './review';

/*
 * Every answer the webhook gives is built here (the AdmissionResponses themselves by review.ts): a review answer
 * (allowed, patched, denied, or allowed unchanged because of our own failure), or an HTTP status without a review
 * (the holds' 503, which leaves the request to the webhook's failurePolicy, and the 4xx of a request we cannot read).
 */

/** How a request ended, as the metrics label it. */
export type AdmissionResult = 'allowed' | 'patched' | 'rejected' | 'error' | 'bad_request';

/** An endpoint's answer plus the metrics label for it. */
export interface EndpointDecision {
  response: AdmissionResponse;
  result: AdmissionResult;
}

/** An answer without a review: an HTTP status with a plain-text reason. */
export interface HttpAnswer {
  http: { status: number; text: string; headers?: Record<string, string> };
  result: AdmissionResult;
}

/** What a handler answers. */
export type Answer = EndpointDecision | HttpAnswer;

/** Longest single warning we send back: the API server shows them to kubectl users. */
export const MAX_WARNING_CHARS = 400;

/** `s` cut to `max` characters, the cut marked with "...". */
export function truncate(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max - 3)}...` : s;
}

/** Allowed unchanged because of our own failure (KubeMod fails open), with a warning saying so. */
export function failOpenResponse(uid: string, error: Error): AdmissionResponse {
  const response = allowResponse(uid);
  response.warnings = [
    truncate(`modrule: internal error, request allowed unchanged: ${error.message}`, MAX_WARNING_CHARS),
  ];
  return response;
}

/** HTTP 503 with Retry-After: the webhook's failurePolicy decides (a hold ran out). */
export function unavailable(text: string): HttpAnswer {
  return { http: { status: 503, text, headers: { 'Retry-After': '1' } }, result: 'error' };
}

/** A request we cannot answer with a review (4xx with the reason); a body too large also closes the connection. */
export function badRequest(status: number, text: string, headers: Record<string, string> = {}): HttpAnswer {
  if (status === 413) headers.Connection = 'close';
  return { http: { status, text, headers }, result: 'bad_request' };
}

/** Whether the answer is an HTTP status rather than a review. */
export function isHttpAnswer(answer: Answer): answer is HttpAnswer {
  return (answer as HttpAnswer).http !== undefined;
}

/**
 * Writes the answer: a review of the version the API server asked in, or the status and its reason (the only answers
 * given before the review is read, hence the default version).
 */
export function sendAnswer(
  res: ServerResponse,
  answer: Answer,
  apiVersion: AdmissionApiVersion = 'admission.k8s.io/v1',
): void {
  if (isHttpAnswer(answer)) sendText(res, answer.http.status, answer.http.text, answer.http.headers);
  else sendJson(res, 200, encodeReview(apiVersion, answer.response));
}
