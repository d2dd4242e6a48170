import { issueServingCert, newCa } from '../certs/generate';

/** A CA and a serving certificate it signed, all PEM. */
export interface GeneratedCertificates {
  caCert: string;
  caKey: string;
  cert: string;
  key: string;
}

export interface CertificateOptions {
  /** DNS names and IP addresses for the serving certificate's SANs; the first is its common name. */
  hosts: readonly string[];
  /** Validity in days; default 365. */
  days?: number;
  /** Common name of the CA; default "modrule-ca". */
  caName?: string;
}

/** Generates a self-signed CA and a serving certificate for the given hosts (for `serve --local` and tests). */
export function generateCertificates(options: CertificateOptions): GeneratedCertificates {
  if (options.hosts.length === 0) throw new Error('at least one host is required');
  const days = options.days ?? 365;
  const now = new Date();
  const ca = newCa(now, days, options.caName ?? 'modrule-ca');
  const serving = issueServingCert(ca, options.hosts, now, days);
  return { caCert: ca.cert, caKey: ca.key, cert: serving.cert, key: serving.key };
}
