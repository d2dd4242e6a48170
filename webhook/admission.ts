import { JsonObject } from '../util/json';
import { AdmissionOperation } from '../rule/types';

/** The AdmissionReview API versions the API server may speak. */
export type AdmissionApiVersion = 'admission.k8s.io/v1' | 'admission.k8s.io/v1beta1';

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

export interface GroupVersionResource {
  group: string;
  version: string;
  resource: string;
}

export interface UserInfo {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** request of an AdmissionReview, as the API server sends it. */
export interface AdmissionRequest {
  uid: string;
  kind: GroupVersionKind;
  resource: GroupVersionResource;
  subResource?: string;
  requestKind?: GroupVersionKind;
  requestResource?: GroupVersionResource;
  requestSubResource?: string;
  name?: string;
  namespace?: string;
  operation: AdmissionOperation;
  userInfo: UserInfo;
  object?: JsonObject | null;
  oldObject?: JsonObject | null;
  dryRun?: boolean;
  options?: JsonObject | null;
}

/** One problem of an invalid object (metav1.StatusCause): kubectl prints `field: message` for each. */
export interface StatusCause {
  /** e.g. FieldValueInvalid, FieldValueRequired (the API server's field.ErrorType names). */
  reason?: string;
  message?: string;
  /** Path of the field, e.g. spec.match[0].matchRegex. */
  field?: string;
}

/** metav1.StatusDetails: which object, and the causes. */
export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: StatusCause[];
}

export interface AdmissionStatus {
  code?: number;
  message?: string;
  reason?: string;
  status?: 'Success' | 'Failure';
  details?: StatusDetails;
}

/** response of an AdmissionReview. */
export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: AdmissionStatus;
  /** base64 of the RFC6902 patch. */
  patch?: string;
  patchType?: 'JSONPatch';
  auditAnnotations?: Record<string, string>;
  warnings?: string[];
}

export interface AdmissionReview {
  apiVersion: AdmissionApiVersion;
  kind: 'AdmissionReview';
  request?: AdmissionRequest;
  response?: AdmissionResponse;
}
