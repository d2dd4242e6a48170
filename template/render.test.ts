import { loadFixture } from '../fixtures/load';
import { JsonObject } from '../util/json';
import { compileTemplate } from './index';

// Data shaped as KubeMod passes it: the admitted object plus the namespace and the current select item.
function data(): Record<string, unknown> {
  const target = loadFixture('deployment');
  const pod = loadFixture('pod');
  target.syntheticRefs = { namespace: loadFixture('namespace'), node: loadFixture('node') } as JsonObject;
  const containers = ((target.spec as JsonObject).template as JsonObject).spec as JsonObject;
  return {
    Target: target,
    Namespace: 'default',
    SelectedItem: (containers.containers as JsonObject[])[1],
    SelectKeyParts: [1],
    Pod: pod,
    Service: loadFixture('service'),
    Values: {
      n: 3,
      big: 1000000,
      bigger: 123456789,
      frac: 0.5,
      small: 0.00001,
      neg: -2.5,
      nul: null,
      empty: '',
      zero: 0,
      t: true,
      f: false,
      list: ['a', 'b', 'c'],
      nums: [3, 1, 2],
      mixed: ['x', 1, null, true],
      map: { b: 2, a: 1, c: { d: 'e' } },
      emptyList: [],
      emptyMap: {},
      html: '<b>&"x"</b>',
    },
  };
}

const render = (src: string, d: Record<string, unknown> = data()): string => compileTemplate(src).render(d);

describe('KubeMod README templates', () => {
  test.each([
    ['{{ .Target.metadata.name }}', 'nginx'],
    ['{{ .Namespace }}', 'default'],
    [
      '- --jaeger.tags=deployment.name={{ .Target.metadata.name }},pod.namespace={{ .Namespace }},pod.id=${POD_ID:},host.ip=${HOST_IP:}',
      '- --jaeger.tags=deployment.name=nginx,pod.namespace=default,pod.id=${POD_ID:},host.ip=${HOST_IP:}',
    ],
    [
      '- --reporter.grpc.host-port=dns:///jaeger-collector-headless.{{ .Namespace }}:14250',
      '- --reporter.grpc.host-port=dns:///jaeger-collector-headless.default:14250',
    ],
    ['{{ regexReplaceAll "(.+)/(.*)" .SelectedItem.image "my-repo/${2}" }}', 'my-repo/log-shipper:2.1'],
    ['{{ index .SelectedItem "image" }}', 'their-repo/log-shipper:2.1'],
    ['{{ index .SelectedItem "imagePullPolicy" }}', 'IfNotPresent'],
    ['{{ .Target.syntheticRefs.namespace.metadata.labels.flavor }}', 'vanilla'],
    [
      '"{{ index .Target.syntheticRefs.node.metadata.labels "topology.kubernetes.io/region"}}"',
      '"eu-west-1"',
    ],
    ['"{{ index .Target.syntheticRefs.node.metadata.labels "topology.kubernetes.io/zone"}}"', '"eu-west-1b"'],
    ['{{ .SelectKeyParts }}', '[1]'],
  ])('%s', (src, expected) => {
    expect(render(src)).toBe(expected);
  });

  test('reject message prints a list as Go does', () => {
    const svc = loadFixture('service');
    (svc.spec as JsonObject).externalIPs = ['1.2.3.4', '5.6.7.8'];
    expect(
      render('One or more of the following external IPs are not allowed {{ .Target.spec.externalIPs }}', {
        Target: svc,
        Namespace: 'default',
      }),
    ).toBe('One or more of the following external IPs are not allowed [1.2.3.4 5.6.7.8]');
  });

  test('the regexReplaceAll example works on the raw SelectedItem string too', () => {
    expect(
      render('{{ regexReplaceAll "(.+)/(.*)" .SelectedItem "my-repo/${2}" }}', {
        SelectedItem: 'docker.io/nginx:1.25',
      }),
    ).toBe('my-repo/nginx:1.25');
  });
});

describe('printing like Go fmt %v', () => {
  test.each([
    ['{{ .Values.n }}', '3'],
    ['{{ .Target.spec.replicas }}', '2'],
    ['{{ .Values.big }}', '1e+06'],
    ['{{ .Values.bigger }}', '1.23456789e+08'],
    ['{{ .Values.frac }}', '0.5'],
    ['{{ .Values.small }}', '1e-05'],
    ['{{ .Values.neg }}', '-2.5'],
    ['{{ .Values.t }} {{ .Values.f }}', 'true false'],
    ['{{ .Values.list }}', '[a b c]'],
    ['{{ .Values.mixed }}', '[x 1 <nil> true]'],
    ['{{ .Values.map }}', 'map[a:1 b:2 c:map[d:e]]'],
    ['{{ .Values.emptyList }} {{ .Values.emptyMap }}', '[] map[]'],
    ['{{ .Values.missing }}', '<no value>'],
    ['{{ .Values.missing.deeper }}', '<no value>'],
    ['{{ .Values.nul }}', '<no value>'],
    ['{{ index .Values.map "zz" }}', '<no value>'],
    ['{{ .Values.html }}', '<b>&"x"</b>'],
    ['{{ 42 }}', '42'],
    ['{{ 1000000 }}', '1000000'],
    ['{{ 1e6 }}', '1e+06'],
    ['{{ 3.0 }}', '3'],
    ['{{ -7 }}', '-7'],
    ['{{ 0x1F }}', '31'],
    ['{{ 0755 }}', '493'],
    ['{{ 1_000 }}', '1000'],
    ["{{ 'a' }}", '97'],
    ['{{ "a\\tb\\u00e9" }}', 'a\tb\u00e9'],
    ['{{ `raw\\n` }}', 'raw\\n'],
    ['{{ true }}', 'true'],
    ['{{ . | printf "%T" }}', 'map[string]interface {}'],
    ['{{ .Target.spec.template.spec.containers | len }}', '2'],
    ['{{ (index .Target.spec.template.spec.containers 0).ports }}', '[map[containerPort:80 protocol:TCP]]'],
  ])('%s', (src, expected) => {
    expect(render(src)).toBe(expected);
  });
});

describe('control flow', () => {
  test.each([
    ['{{ if .Values.t }}yes{{ end }}', 'yes'],
    ['{{ if .Values.f }}yes{{ else }}no{{ end }}', 'no'],
    ['{{ if .Values.missing }}yes{{ else }}no{{ end }}', 'no'],
    ['{{ if .Values.empty }}a{{ else if .Values.zero }}b{{ else if .Values.list }}c{{ end }}', 'c'],
    ['{{ if .Values.emptyList }}a{{ else if .Values.emptyMap }}b{{ else }}c{{ end }}', 'c'],
    ['{{ if and .Values.t .Values.n }}both{{ end }}', 'both'],
    ['{{ and .Values.n .Values.empty .Values.t }}|', '|'],
    ['{{ or .Values.empty .Values.zero "fallback" }}', 'fallback'],
    ['{{ or .Values.n (index .Values.list 99) }}', '3'],
    ['{{ and .Values.f (index .Values.list 99) }}', 'false'],
    ['{{ not .Values.t }} {{ not .Values.empty }}', 'false true'],
    ['{{ with .Target.metadata }}{{ .name }}/{{ .namespace }}{{ end }}', 'nginx/default'],
    ['{{ with .Values.missing }}x{{ else }}none{{ end }}', 'none'],
    ['{{ with $m := .Values.map }}{{ $m.a }}{{ end }}', '1'],
    ['{{ range .Values.list }}<{{ . }}>{{ end }}', '<a><b><c>'],
    ['{{ range $i, $v := .Values.list }}{{ $i }}={{ $v }};{{ end }}', '0=a;1=b;2=c;'],
    ['{{ range $k, $v := .Values.map }}{{ $k }}:{{ $v }} {{ end }}', 'a:1 b:2 c:map[d:e] '],
    ['{{ range $v := .Values.nums }}{{ $v }}{{ end }}', '312'],
    ['{{ range .Values.emptyList }}x{{ else }}empty{{ end }}', 'empty'],
    ['{{ range .Values.missing }}x{{ else }}nothing{{ end }}', 'nothing'],
    ['{{ range 4 }}{{ . }}{{ end }}', '0123'],
    ['{{ range .Values.list }}{{ if eq . "b" }}{{ break }}{{ end }}{{ . }}{{ end }}', 'a'],
    ['{{ range .Values.list }}{{ if eq . "b" }}{{ continue }}{{ end }}{{ . }}{{ end }}', 'ac'],
    [
      '{{ range .Target.spec.template.spec.containers }}{{ .name }}:{{ range .ports }}{{ .containerPort }}{{ end }} {{ end }}',
      'nginx:80 log-shipper:9100 ',
    ],
    [
      '{{ range $c := .Target.spec.template.spec.containers }}{{ $.Namespace }}/{{ $c.name }} {{ end }}',
      'default/nginx default/log-shipper ',
    ],
    [
      '{{ define "x" }}[{{ . }}]{{ end }}{{ template "x" .Namespace }}{{ template "x" }}',
      '[default][<no value>]',
    ],
    ['{{ block "b" .Values.n }}n={{ . }}{{ end }}', 'n=3'],
    ['{{/* a comment */}}a{{- /* trimmed */ -}} b', 'ab'],
  ])('%s', (src, expected) => {
    expect(render(src)).toBe(expected);
  });
});

describe('variables and pipelines', () => {
  test.each([
    ['{{ $x := .Values.n }}{{ $x }}', '3'],
    ['{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ end }}{{ $x }}', '2'],
    ['{{ $x := "a" }}{{ range .Values.list }}{{ $x = . }}{{ end }}{{ $x }}', 'c'],
    ['{{ $ := . }}', ''],
    ['{{ $.Namespace }}', 'default'],
    ['{{ $t := .Target }}{{ $t.metadata.labels.app }}', 'nginx'],
    ['{{ .Namespace | upper }}', 'DEFAULT'],
    ['{{ .Namespace | printf "%s-%s" "ns" }}', 'ns-default'],
    ['{{ "abc" | upper | repeat 2 }}', 'ABCABC'],
    ['{{ (printf "%s/%s" .Namespace .Target.metadata.name) | quote }}', '"default/nginx"'],
    ['{{ (.Target.metadata).name }}', 'nginx'],
    ['{{ (index .Target.spec.template.spec.containers 1).name }}', 'log-shipper'],
    ['{{ len (index .Target.spec.template.spec.containers 0).ports }}', '1'],
  ])('%s', (src, expected) => {
    expect(render(src)).toBe(expected);
  });
});

describe('whitespace trimming', () => {
  test.each([
    ['a  {{- "b" -}}  c', 'abc'],
    ['a\n\t{{- "b" }}\n c', 'ab\n c'],
    ['a {{ "b" -}}\n\n  c', 'a bc'],
    ['{{- 3 -}}', '3'],
    ['x {{-3}}', 'x -3'],
    ['a {{- /* c */}} b', 'a b'],
    ['list:\n{{- range .Values.list }}\n- {{ . }}\n{{- end }}', 'list:\n- a\n- b\n- c'],
  ])('%j', (src, expected) => {
    expect(render(src)).toBe(expected);
  });
});

describe('comparisons', () => {
  test.each([
    ['{{ eq .Namespace "default" }}', 'true'],
    ['{{ eq .Namespace "kube-system" "default" }}', 'true'],
    ['{{ ne .Namespace "default" }}', 'false'],
    ['{{ eq .Target.spec.replicas 2.0 }}', 'true'],
    ['{{ eq (len .Values.list) 3 }}', 'true'],
    ['{{ eq .Values.missing "x" }}', 'false'],
    ['{{ eq .Values.missing .Values.nul }}', 'true'],
    ['{{ lt 1 2 }} {{ le 2 2 }} {{ gt 1 2 }} {{ ge 2 3 }}', 'true true false false'],
    ['{{ lt "a" "b" }}', 'true'],
    ['{{ lt .Values.frac 1.0 }}', 'true'],
  ])('%s', (src, expected) => {
    expect(render(src)).toBe(expected);
  });
});

describe('plain text', () => {
  test('a value without actions renders as itself', () => {
    expect(render('IfNotPresent')).toBe('IfNotPresent');
    expect(render('')).toBe('');
    expect(render('{ "a": 1 }')).toBe('{ "a": 1 }');
  });

  test('a compiled template renders many times with different data', () => {
    const t = compileTemplate('{{ .Namespace }}');
    expect(t.render({ Namespace: 'a' })).toBe('a');
    expect(t.render({ Namespace: 'b' })).toBe('b');
    expect(t.source).toBe('{{ .Namespace }}');
  });

  test('rendering never modifies the data, even when the template uses set/unset/merge', () => {
    const d = data();
    const before = JSON.stringify(d);
    const out = render(
      '{{ $m := .Values.map }}{{ $_ := set $m "a" 9 }}{{ $_ := unset .Target "spec" }}{{ $_ := merge .Values.map (dict "z" 1) }}{{ .Values.map.a }} {{ .Values.map.z }} {{ .Target.spec }}',
      d,
    );
    // Inside the template the mutation is visible, as in Go...
    expect(out).toBe('9 1 <no value>');
    // ...but the caller's object is untouched.
    expect(JSON.stringify(d)).toBe(before);
  });
});
