import { createPrivateKey, X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { issueServingCert, newCa, unix } from '../../webhook/certs';

const DAY_MS = 24 * 60 * 60 * 1000;

/** Everything the Secret holds: the trusted CA bundle (signing CA first), the signing CA's key, the serving pair. */
export interface CertBundle {
  /** PEM bundle: the CA that signs new serving certificates first, then older CAs still trusted during a rollover. */
  caCert: string;
  /** Key of the first CA in caCert. */
  caKey: string;
  cert: string;
  key: string;
  /** When the current signing CA was introduced (ISO time), set during a CA rollover. */
  caRotatedAt?: string;
}

export interface CertTiming {
  caDays: number;
  servingDays: number;
  /** Renew the serving certificate when it expires within this many days. */
  servingRenewBeforeDays: number;
  /** Start a CA rollover when the signing CA expires within this many days. */
  caRenewBeforeDays: number;
  /** How long a new CA is published in caBundle before serving certificates signed by it are used. */
  caPropagationMs: number;
}

export const DEFAULT_TIMING: CertTiming = {
  caDays: 3650,
  servingDays: 365,
  servingRenewBeforeDays: 30,
  caRenewBeforeDays: 90,
  caPropagationMs: 5 * 60 * 1000,
};

/** The DNS names the API server may use to reach the webhook Service. */
export function serviceHosts(service: string, namespace: string): string[] {
  return [
    service,
    `${service}.${namespace}`,
    `${service}.${namespace}.svc`,
    `${service}.${namespace}.svc.cluster.local`,
  ];
}

/** The PEM blocks of a bundle. */
export function splitPem(bundle: string): string[] {
  return (
    bundle
      .match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)
      ?.map((b) => unix(b) + '\n') ?? []
  );
}

/** A fresh CA and serving certificate. */
export function newBundle(
  hosts: readonly string[],
  now: Date,
  timing: CertTiming = DEFAULT_TIMING,
): CertBundle {
  const ca = newCa(now, timing.caDays);
  const serving = issueServingCert(ca, hosts, now, timing.servingDays);
  return { caCert: ca.cert, caKey: ca.key, ...serving };
}

/** One spelling per name: DNS names lower-case, IPv6 addresses expanded as X509Certificate prints them. */
export function canonicalHost(host: string): string {
  if (isIP(host) !== 6) return host.toLowerCase();
  const [head, tail = ''] = host.toLowerCase().split('::');
  const left = head ? head.split(':') : [];
  const right = host.includes('::') && tail ? tail.split(':') : [];
  const groups = host.includes('::')
    ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
    : left;
  return groups.map((g) => g.replace(/^0+(?=.)/, '')).join(':');
}

function sans(cert: X509Certificate): Set<string> {
  const out = new Set<string>();
  for (const part of (cert.subjectAltName ?? '').split(',')) {
    const m = /^\s*(DNS|IP Address):(.+)$/.exec(part);
    if (m) out.add(canonicalHost(m[2].trim()));
  }
  return out;
}

function keyMatches(cert: X509Certificate, keyPem: string): boolean {
  try {
    return cert.checkPrivateKey(createPrivateKey(keyPem));
  } catch {
    return false;
  }
}

/** The serving certificate's expiry (for metrics and logs). */
export function expiryOf(certPem: string): Date {
  return new Date(new X509Certificate(certPem).validTo);
}

/**
 * What to change in the stored certificates, or null when they are fine: create them when missing or unusable,
 * start a CA rollover (new CA published next to the old one) when the CA nears expiry, and issue a new serving
 * certificate when it nears expiry, lacks a host, or is still signed by a CA that has been replaced long enough.
 */
export function planCertificates(
  current: CertBundle | null,
  hosts: readonly string[],
  now: Date,
  timing: CertTiming = DEFAULT_TIMING,
): { bundle: CertBundle; reason: string } | null {
  if (!current) return { bundle: newBundle(hosts, now, timing), reason: 'created' };
  const pems = splitPem(current.caCert);
  let cas: X509Certificate[];
  let serving: X509Certificate;
  try {
    cas = pems.map((p) => new X509Certificate(p));
    serving = new X509Certificate(current.cert);
  } catch {
    return { bundle: newBundle(hosts, now, timing), reason: 'unparsable certificates replaced' };
  }
  const expires = (c: X509Certificate) => new Date(c.validTo).getTime();
  const signing = cas[0];
  if (!signing || expires(signing) <= now.getTime() || !keyMatches(signing, current.caKey)) {
    return {
      bundle: newBundle(hosts, now, timing),
      reason: 'CA missing, expired or not matching its key: replaced',
    };
  }
  // Expired CAs leave the bundle; the signing CA stays first.
  const trusted = pems.filter((_p, i) => expires(cas[i]) > now.getTime());
  let bundle: CertBundle = { ...current, caCert: trusted.join('') };
  const reasons: string[] = [];
  if (trusted.length !== cas.length) reasons.push('expired CA dropped from the bundle');

  if (expires(signing) - now.getTime() < timing.caRenewBeforeDays * DAY_MS) {
    const ca = newCa(now, timing.caDays);
    bundle = { ...bundle, caCert: ca.cert + bundle.caCert, caKey: ca.key, caRotatedAt: now.toISOString() };
    reasons.push('CA rollover started');
    return { bundle, reason: reasons.join('; ') };
  }

  const signedByCurrent = serving.checkIssued(signing) && serving.verify(signing.publicKey);
  const rolloverSettled =
    !bundle.caRotatedAt || now.getTime() - Date.parse(bundle.caRotatedAt) >= timing.caPropagationMs;
  const names = sans(serving);
  let reissue = '';
  if (!keyMatches(serving, current.key)) reissue = 'serving key does not match';
  else if (hosts.some((h) => !names.has(canonicalHost(h)))) reissue = 'serving certificate lacks a host';
  else if (expires(serving) - now.getTime() < timing.servingRenewBeforeDays * DAY_MS)
    reissue = 'serving certificate near expiry';
  else if (!signedByCurrent && rolloverSettled) reissue = 'serving certificate moved to the new CA';
  if (reissue) {
    bundle = {
      ...bundle,
      ...issueServingCert({ cert: pems[0], key: bundle.caKey }, hosts, now, timing.servingDays),
    };
    reasons.push(reissue);
  }
  return reasons.length > 0 ? { bundle, reason: reasons.join('; ') } : null;
}
