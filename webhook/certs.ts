import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import forge from 'node-forge';

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

function newKeyPair(): { privateKey: forge.pki.rsa.PrivateKey; publicKey: forge.pki.rsa.PublicKey } {
  // Node's native RSA generation is far faster than forge's pure-JS one.
  const { privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const key = forge.pki.privateKeyFromPem(privateKey) as forge.pki.rsa.PrivateKey;
  return { privateKey: key, publicKey: forge.pki.setRsaPublicKey(key.n, key.e) };
}

function serial(): string {
  const bytes = randomBytes(16);
  bytes[0] &= 0x7f; // positive
  return bytes.toString('hex');
}

function validity(cert: forge.pki.Certificate, days: number): void {
  const now = new Date();
  cert.validity.notBefore = new Date(now.getTime() - 5 * 60 * 1000); // tolerate clock skew
  cert.validity.notAfter = new Date(now.getTime() + days * 24 * 60 * 60 * 1000);
}

/** Generates a self-signed CA and a serving certificate for the given hosts (for `serve --local` and tests). */
export function generateCertificates(options: CertificateOptions): GeneratedCertificates {
  if (options.hosts.length === 0) throw new Error('at least one host is required');
  const days = options.days ?? 365;
  const caKeys = newKeyPair();
  const ca = forge.pki.createCertificate();
  ca.publicKey = caKeys.publicKey;
  ca.serialNumber = serial();
  validity(ca, days);
  const caSubject = [{ name: 'commonName', value: options.caName ?? 'modrule-ca' }];
  ca.setSubject(caSubject);
  ca.setIssuer(caSubject);
  ca.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  ca.sign(caKeys.privateKey, forge.md.sha256.create());

  const keys = newKeyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = serial();
  validity(cert, days);
  cert.setSubject([{ name: 'commonName', value: options.hosts[0] }]);
  cert.setIssuer(caSubject);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    {
      name: 'subjectAltName',
      altNames: options.hosts.map((h) => (isIP(h) ? { type: 7, ip: h } : { type: 2, value: h })),
    },
    { name: 'authorityKeyIdentifier', keyIdentifier: ca.generateSubjectKeyIdentifier().getBytes() },
  ]);
  cert.sign(caKeys.privateKey, forge.md.sha256.create());

  return {
    caCert: unix(forge.pki.certificateToPem(ca)),
    caKey: unix(forge.pki.privateKeyToPem(caKeys.privateKey)),
    cert: unix(forge.pki.certificateToPem(cert)),
    key: unix(forge.pki.privateKeyToPem(keys.privateKey)),
  };
}

// forge writes PEM with CRLF; files and caBundles read better with plain newlines.
function unix(pem: string): string {
  return pem.replace(/\r\n/g, '\n');
}
