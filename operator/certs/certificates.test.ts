import { X509Certificate } from 'node:crypto';
import { CertTiming, newBundle, planCertificates, serviceHosts, splitPem } from './certificates';

const DAY = 24 * 60 * 60 * 1000;
const hosts = serviceHosts('kubemod-webhook-service', 'kubemod-system');
const t0 = new Date('2026-01-01T00:00:00Z');
const at = (days: number, extraMs = 0) => new Date(t0.getTime() + days * DAY + extraMs);

// Short lifetimes so a whole CA lifetime fits in one test.
const timing: CertTiming = {
  caDays: 100,
  servingDays: 30,
  servingRenewBeforeDays: 5,
  caRenewBeforeDays: 20,
  caPropagationMs: 5 * 60 * 1000,
};

const x509 = (pem: string) => new X509Certificate(pem);
const issuedBy = (certPem: string, caPem: string) =>
  x509(certPem).checkIssued(x509(caPem)) && x509(certPem).verify(x509(caPem).publicKey);

describe('serviceHosts', () => {
  it('covers every name the API server may use for the Service', () => {
    expect(hosts).toEqual([
      'kubemod-webhook-service',
      'kubemod-webhook-service.kubemod-system',
      'kubemod-webhook-service.kubemod-system.svc',
      'kubemod-webhook-service.kubemod-system.svc.cluster.local',
    ]);
  });
});

describe('planCertificates', () => {
  it('creates a 10-year CA and a 1-year serving certificate for the Service names', () => {
    const plan = planCertificates(null, hosts, t0);
    expect(plan?.reason).toBe('created');
    const { caCert, cert, caKey, key } = plan!.bundle;
    expect(caKey).toContain('PRIVATE KEY');
    expect(key).toContain('PRIVATE KEY');
    expect(x509(caCert).ca).toBe(true);
    expect(issuedBy(cert, caCert)).toBe(true);
    expect(x509(cert).subjectAltName).toBe(hosts.map((h) => `DNS:${h}`).join(', '));
    expect(new Date(x509(caCert).validTo).getTime() - t0.getTime()).toBeCloseTo(3650 * DAY, -6);
    expect(new Date(x509(cert).validTo).getTime() - t0.getTime()).toBeCloseTo(365 * DAY, -6);
    expect(planCertificates(plan!.bundle, hosts, at(1))).toBeNull();
  });

  it('replaces unusable certificates', () => {
    const garbage = { caCert: 'nope', caKey: 'nope', cert: 'nope', key: 'nope' };
    expect(planCertificates(garbage, hosts, t0)?.reason).toMatch(/replaced/);
    const a = newBundle(hosts, t0, timing);
    const b = newBundle(hosts, t0, timing);
    expect(planCertificates({ ...a, caKey: b.caKey }, hosts, t0, timing)?.reason).toMatch(/not matching/);
    expect(planCertificates({ ...a, key: b.key }, hosts, t0, timing)?.reason).toMatch(/key does not match/);
  });

  it('reissues the serving certificate when a host is missing, keeping the CA', () => {
    const bundle = newBundle(hosts, t0, timing);
    const plan = planCertificates(bundle, [...hosts, '10.0.0.7'], at(1), timing);
    expect(plan?.reason).toMatch(/lacks a host/);
    expect(plan!.bundle.caCert).toBe(bundle.caCert);
    expect(x509(plan!.bundle.cert).subjectAltName).toContain('IP Address:10.0.0.7');
  });

  it('takes extra DNS and IP SANs (IPv6 in any spelling) and is then content', () => {
    const extra = ['modrule.example.com', '127.0.0.1', '::1', 'FD00:0:0::A:1'];
    const plan = planCertificates(null, [...hosts, ...extra], t0, timing);
    const names = x509(plan!.bundle.cert).subjectAltName;
    expect(names).toContain('DNS:modrule.example.com');
    expect(names).toContain('IP Address:127.0.0.1');
    expect(names).toContain('IP Address:0:0:0:0:0:0:0:1');
    // Before: IPv6 names never matched their printed form, so every hourly check reissued.
    expect(planCertificates(plan!.bundle, [...hosts, ...extra], at(1), timing)).toBeNull();
  });

  it('walks a whole CA lifetime: serving renewals, a two-phase CA rollover, the old CA retired', () => {
    let bundle = planCertificates(null, hosts, t0, timing)!.bundle;
    const firstCa = bundle.caCert;
    const renew = (day: number, extraMs = 0) => {
      const plan = planCertificates(bundle, hosts, at(day, extraMs), timing);
      if (plan) bundle = plan.bundle;
      return plan?.reason ?? null;
    };
    expect(renew(20)).toBeNull();
    expect(renew(26)).toBe('serving certificate near expiry');
    expect(bundle.caCert).toBe(firstCa);
    expect(issuedBy(bundle.cert, firstCa)).toBe(true);
    expect(renew(52)).toBe('serving certificate near expiry');
    expect(renew(78)).toBe('serving certificate near expiry');
    // Never outlives its CA.
    expect(new Date(x509(bundle.cert).validTo).getTime()).toBeLessThanOrEqual(
      new Date(x509(firstCa).validTo).getTime(),
    );

    // Phase 1: a new CA is published next to the old one; the serving certificate stays.
    const servingBefore = bundle.cert;
    expect(renew(81)).toBe('CA rollover started');
    const cas = splitPem(bundle.caCert);
    expect(cas).toHaveLength(2);
    expect(cas[1]).toBe(firstCa);
    expect(bundle.cert).toBe(servingBefore);
    expect(renew(81, 60_000)).toBeNull(); // caBundle still propagating
    // Phase 2: once propagated, serving moves to the new CA; the old CA stays trusted until it expires.
    expect(renew(81, 10 * 60_000)).toBe('serving certificate moved to the new CA');
    expect(issuedBy(bundle.cert, cas[0])).toBe(true);
    expect(splitPem(bundle.caCert)).toHaveLength(2);
    expect(renew(101)).toBe('expired CA dropped from the bundle');
    expect(splitPem(bundle.caCert)).toEqual([cas[0]]);
  });
});
