import { constants, generateKeyPairSync, privateEncrypt, randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import forge from 'node-forge';

// Certificate generation shared by the operator (its Secret-backed CA), `serve --local` and tests (throwaway CAs).

const DAY_MS = 24 * 60 * 60 * 1000;

/** A PEM certificate and its PEM private key. */
export interface KeyPairPem {
  cert: string;
  key: string;
}

// forge writes CRLF line ends; one form keeps string comparisons of PEMs meaningful.
/** PEM with plain newlines (forge writes CRLF). */
export function unix(pem: string): string {
  return pem.replace(/\r\n/g, '\n');
}

function keyPair(): {
  privateKey: forge.pki.rsa.PrivateKey;
  publicKey: forge.pki.rsa.PublicKey;
  pem: string;
} {
  // Node's native RSA generation is far faster than forge's pure-JS one.
  const { privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const key = forge.pki.privateKeyFromPem(privateKey) as forge.pki.rsa.PrivateKey;
  return { privateKey: key, publicKey: forge.pki.setRsaPublicKey(key.n, key.e), pem: privateKey };
}

// DER of a DigestInfo's SHA-256 AlgorithmIdentifier and the octet string's header: what PKCS#1 v1.5 signs.
const SHA256_DIGEST_INFO = Buffer.from('3031300d060960864801650304020105000420', 'hex');

/**
 * Signs `cert` (SHA-256 with RSA) with the PEM key through Node's crypto. forge's own big-integer RSA takes up to a
 * second a signature on a busy machine, and ten times that under jest on Node 24 (whose global `navigator` sends
 * forge's big-integer code down a slow path): an event loop blocked that long drops the operator's idle API
 * connections. forge's sign() hands the key the digest of the to-be-signed certificate; Node signs it the same way.
 */
function signWith(cert: forge.pki.Certificate, keyPem: string): void {
  const signer = {
    sign: (md: forge.md.MessageDigest): string => {
      const digest = Buffer.from(md.digest().getBytes(), 'binary');
      const info = Buffer.concat([SHA256_DIGEST_INFO, digest]);
      return privateEncrypt({ key: keyPem, padding: constants.RSA_PKCS1_PADDING }, info).toString('binary');
    },
  };
  cert.sign(signer as unknown as forge.pki.rsa.PrivateKey, forge.md.sha256.create());
}

function serial(): string {
  const bytes = randomBytes(16);
  bytes[0] &= 0x7f;
  return bytes.toString('hex');
}

/** A new self-signed CA valid from now (minus clock-skew slack) for `days`. */
export function newCa(
  now: Date,
  days: number,
  commonName = `modrule-webhook-ca-${now.getTime()}`,
): KeyPairPem {
  const keys = keyPair();
  const ca = forge.pki.createCertificate();
  ca.publicKey = keys.publicKey;
  ca.serialNumber = serial();
  ca.validity.notBefore = new Date(now.getTime() - 5 * 60 * 1000);
  ca.validity.notAfter = new Date(now.getTime() + days * DAY_MS);
  const subject = [{ name: 'commonName', value: commonName }];
  ca.setSubject(subject);
  ca.setIssuer(subject);
  ca.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  signWith(ca, keys.pem);
  return {
    cert: unix(forge.pki.certificateToPem(ca)),
    key: unix(forge.pki.privateKeyToPem(keys.privateKey)),
  };
}

/** A serving certificate for hosts signed by ca; never outlives the CA. */
export function issueServingCert(
  ca: KeyPairPem,
  hosts: readonly string[],
  now: Date,
  days: number,
): KeyPairPem {
  const caCert = forge.pki.certificateFromPem(ca.cert);
  const keys = keyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = serial();
  cert.validity.notBefore = new Date(now.getTime() - 5 * 60 * 1000);
  cert.validity.notAfter = new Date(
    Math.min(now.getTime() + days * DAY_MS, caCert.validity.notAfter.getTime()),
  );
  cert.setSubject([{ name: 'commonName', value: hosts[0] }]);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    {
      name: 'subjectAltName',
      altNames: hosts.map((h) => (isIP(h) ? { type: 7, ip: h } : { type: 2, value: h })),
    },
    { name: 'authorityKeyIdentifier', keyIdentifier: caCert.generateSubjectKeyIdentifier().getBytes() },
  ]);
  signWith(cert, ca.key);
  return {
    cert: unix(forge.pki.certificateToPem(cert)),
    key: unix(forge.pki.privateKeyToPem(keys.privateKey)),
  };
}

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
