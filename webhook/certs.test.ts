import { X509Certificate } from 'node:crypto';
import { issueServingCert, newCa } from './certs';

describe('certificate generation', () => {
  const now = new Date('2026-11-23T10:00:00Z');
  const ca = newCa(now, 3650, 'test-ca');
  const serving = issueServingCert(ca, ['kubemod-webhook-service.kubemod-system.svc', '127.0.0.1'], now, 365);
  const caCert = new X509Certificate(ca.cert);
  const cert = new X509Certificate(serving.cert);

  it('makes a CA that signs the serving certificate', () => {
    expect(caCert.ca).toBe(true);
    expect(cert.ca).toBe(false);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.checkIssued(caCert)).toBe(true);
  });

  it('names every host, DNS names and IPs, in the SANs', () => {
    expect(cert.subjectAltName).toBe('DNS:kubemod-webhook-service.kubemod-system.svc, IP Address:127.0.0.1');
    expect(cert.checkHost('kubemod-webhook-service.kubemod-system.svc')).toBeDefined();
    expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1');
  });

  it('tolerates clock skew and never outlives the CA', () => {
    expect(new Date(cert.validFrom).getTime()).toBeLessThan(now.getTime());
    const shortCa = newCa(now, 10);
    const long = new X509Certificate(issueServingCert(shortCa, ['x'], now, 365).cert);
    expect(new Date(long.validTo).getTime()).toBeLessThanOrEqual(
      new Date(new X509Certificate(shortCa.cert).validTo).getTime(),
    );
  });

  it('writes PEM with plain newlines', () => {
    for (const pem of [ca.cert, ca.key, serving.cert, serving.key]) expect(pem).not.toContain('\r');
  });
});
