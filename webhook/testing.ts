import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { PeerCertificate, TLSSocket } from 'node:tls';
import { AdmissionApiVersion, AdmissionReview } from './admission';
import { JsonObject } from '../util/json';
import { AdmissionOperation } from '../rule/types';
import { silentLogger } from '../util/logger';
import { RuleStore } from '../store/rules';
import { EndpointOptions, RunningWebhook, startWebhookServer, TransportOptions } from './server';
import { MemoryTlsSource } from './tls';

/** One HTTP exchange as a client saw it. */
export interface ClientResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** The serving certificate (HTTPS only). */
  peer?: PeerCertificate;
}

/** Sends one request over HTTPS (trusting only `ca`) or HTTP and collects the answer; for tests and tools. */
export function send(
  url: string,
  options: {
    method?: string;
    body?: string | Buffer;
    headers?: Record<string, string>;
    ca?: string;
    /** Streams the body in pieces without a Content-Length (chunked). */
    chunks?: Buffer[];
  } = {},
): Promise<ClientResponse> {
  const u = new URL(url);
  const isHttps = u.protocol === 'https:';
  return new Promise((resolve, reject) => {
    const req = (isHttps ? httpsRequest : httpRequest)(
      u,
      {
        method: options.method ?? (options.body !== undefined || options.chunks ? 'POST' : 'GET'),
        headers: options.headers,
        ...(isHttps ? { ca: options.ca, agent: false } : { agent: false }),
      },
      (res) => {
        const peer = isHttps ? (res.socket as TLSSocket).getPeerCertificate() : undefined;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
            peer,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (options.chunks) {
      for (const c of options.chunks) req.write(c);
      req.end();
    } else req.end(options.body);
  });
}

/** POSTs an AdmissionReview as the API server does and parses the answer. */
export async function postReview(
  baseUrl: string,
  path: string,
  review: unknown,
  ca: string,
): Promise<{ status: number; review: AdmissionReview; raw: ClientResponse }> {
  const raw = await send(baseUrl + path, {
    body: JSON.stringify(review),
    headers: { 'Content-Type': 'application/json' },
    ca,
  });
  if (raw.status !== 200) throw new Error(`HTTP ${raw.status}: ${raw.body}`);
  return { status: raw.status, review: JSON.parse(raw.body) as AdmissionReview, raw };
}

const RESOURCES: Record<string, { group: string; version: string; resource: string }> = {
  Deployment: { group: 'apps', version: 'v1', resource: 'deployments' },
  Pod: { group: '', version: 'v1', resource: 'pods' },
  Service: { group: '', version: 'v1', resource: 'services' },
  Namespace: { group: '', version: 'v1', resource: 'namespaces' },
  Node: { group: '', version: 'v1', resource: 'nodes' },
  ModRule: { group: 'api.kubemod.io', version: 'v1beta1', resource: 'modrules' },
};

let counter = 0;

/** Builds an AdmissionReview the way the API server would send it for this object and operation. */
export function makeReview(
  operation: AdmissionOperation,
  object: JsonObject | null,
  oldObject: JsonObject | null = null,
  extra: { apiVersion?: AdmissionApiVersion; dryRun?: boolean; subResource?: string; uid?: string } = {},
): AdmissionReview & { request: NonNullable<AdmissionReview['request']> } {
  const subject = (object ?? oldObject) as JsonObject;
  const kind = String(subject.kind);
  const meta = (subject.metadata ?? {}) as JsonObject;
  const r = RESOURCES[kind] ?? { group: '', version: 'v1', resource: `${kind.toLowerCase()}s` };
  const gvk = { group: r.group, version: r.version, kind };
  const namespace = kind === 'Namespace' ? undefined : (meta.namespace as string | undefined);
  counter++;
  return {
    apiVersion: extra.apiVersion ?? 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: extra.uid ?? `test-${process.pid}-${counter}`,
      kind: gvk,
      resource: r,
      requestKind: gvk,
      requestResource: r,
      ...(extra.subResource ? { subResource: extra.subResource, requestSubResource: extra.subResource } : {}),
      name: meta.name as string | undefined,
      ...(namespace ? { namespace } : {}),
      operation,
      userInfo: { username: 'kubernetes-admin', groups: ['system:masters', 'system:authenticated'] },
      object,
      oldObject,
      dryRun: extra.dryRun ?? false,
    },
  };
}

/** Decodes a response's base64 JSON patch. */
export function decodePatch(review: AdmissionReview): unknown[] {
  const p = review.response?.patch;
  return p ? (JSON.parse(Buffer.from(p, 'base64').toString('utf8')) as unknown[]) : [];
}

/** A webhook server for tests: on a free loopback port, ready, silent, serving `certs`; `options` override. */
export function startTestServer(
  store: RuleStore,
  certs: { cert: string; key: string },
  options: Partial<TransportOptions> & Partial<EndpointOptions> = {},
): Promise<RunningWebhook> {
  const { tls, port, host, healthPort, healthHost, logger, registry, processMetrics, isReady, ...rest } =
    options;
  const { maxBodyBytes, closeTimeoutMs, headersTimeoutMs, requestTimeoutMs, ...endpoints } = rest;
  return startWebhookServer(
    {
      tls: tls ?? new MemoryTlsSource({ cert: certs.cert, key: certs.key }),
      port: port ?? 0,
      host: host ?? '127.0.0.1',
      healthPort: healthPort ?? 0,
      ...{
        healthHost,
        registry,
        processMetrics,
        maxBodyBytes,
        closeTimeoutMs,
        headersTimeoutMs,
        requestTimeoutMs,
      },
      logger: logger ?? silentLogger(),
      isReady: isReady ?? (() => true),
    },
    { store, ...endpoints },
  );
}
