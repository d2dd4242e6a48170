{{/*
The chart does not restate the manifests: it reads bundle.yaml (built from config/) and the cert-manager overlay
(config/cert-manager), copied in as files/bundle.yaml and files/cert-manager by make bundle, and changes only what a
value asks for. The helpers below take a dict: "o" the object to change in place, "root" the chart's top-level context.
*/}}

{{/* The YAML documents of a file in the chart as a list of objects; fails when the file is missing or empty. */}}
{{- define "modrule.documents" -}}
{{- $text := .root.Files.Get .file -}}
{{- if not (trim $text) -}}
{{- fail (printf "%s is missing or empty: it is a copy of the repository's %s (make bundle writes it)" .file .source) -}}
{{- end -}}
{{- $docs := list -}}
{{- range $part := regexSplit "(?m)^---[ \\t]*$" $text -1 -}}
{{- if regexMatch "(?m)^[^#\\s]" $part -}}
{{- $o := fromYaml $part -}}
{{- if hasKey $o "Error" -}}
{{- fail (printf "%s: %s" $.file $o.Error) -}}
{{- end -}}
{{- $docs = append $docs $o -}}
{{- end -}}
{{- end -}}
{{- toYaml $docs -}}
{{- end -}}

{{/* The operator's namespace: the bundle's Deployment's. */}}
{{- define "modrule.namespace" -}}
{{- range $o := include "modrule.documents" (dict "root" . "file" "files/bundle.yaml" "source" "bundle.yaml (make bundle)") | fromYamlArray -}}
{{- if eq $o.kind "Deployment" -}}{{- $o.metadata.namespace -}}{{- end -}}
{{- end -}}
{{- end -}}

{{/* "name[:tag][@digest]" with the repository and tag of .Values.image put in where they are set. */}}
{{- define "modrule.image" -}}
{{- $pattern := "^(.+?)(?::([^:/@]+))?(@.+)?$" -}}
{{- $repository := default (regexReplaceAll $pattern .image "${1}") .values.repository -}}
{{- $tag := default (regexReplaceAll $pattern .image "${2}") .values.tag -}}
{{- $digest := ternary "" (regexReplaceAll $pattern .image "${3}") (ne .values.tag "") -}}
{{- printf "%s%s%s" $repository (ternary (printf ":%s" $tag) "" (ne $tag "")) $digest -}}
{{- end -}}

{{/* The operator Deployment: image, replicas, resources, scheduling, log level, the patched-by record, what rules may read. */}}
{{- define "modrule.deployment" -}}
{{- $v := .root.Values -}}
{{- $spec := .o.spec -}}
{{- $pod := $spec.template.spec -}}
{{- $c := index $pod.containers 0 -}}
{{- if not (kindIs "invalid" $v.replicas) -}}{{- $_ := set $spec "replicas" $v.replicas -}}{{- end -}}
{{- $_ := set $c "image" (include "modrule.image" (dict "image" $c.image "values" $v.image)) -}}
{{- if $v.image.pullPolicy -}}{{- $_ := set $c "imagePullPolicy" $v.image.pullPolicy -}}{{- end -}}
{{- if $v.resources -}}{{- $_ := set $c "resources" $v.resources -}}{{- end -}}
{{- if $v.nodeSelector -}}{{- $_ := set $pod "nodeSelector" $v.nodeSelector -}}{{- end -}}
{{- if $v.tolerations -}}{{- $_ := set $pod "tolerations" $v.tolerations -}}{{- end -}}
{{- if $v.affinity -}}{{- $_ := set $pod "affinity" $v.affinity -}}{{- end -}}
{{- if $v.priorityClassName -}}{{- $_ := set $pod "priorityClassName" $v.priorityClassName -}}{{- end -}}
{{- if $v.logLevel -}}
{{- $_ := set $c "args" (append $c.args (printf "--log-level=%s" $v.logLevel)) -}}
{{- end -}}
{{- if $v.recordPatchedBy -}}
{{- $_ := set $c "args" (append $c.args "--record-patched-by") -}}
{{- end -}}
{{- if $v.references.secrets -}}
{{- $_ := set $c "args" (append $c.args "--allow-secret-references") -}}
{{- end -}}
{{- if $v.references.ownerKinds -}}
{{- $_ := set $c "args" (append $c.args (printf "--owner-kinds=%s" (join "," $v.references.ownerKinds))) -}}
{{- end -}}
{{- end -}}

{{/* The name of the Service port that reaches /metrics (container port 8081, named metrics or health), or "". */}}
{{- define "modrule.metricsPortName" -}}
{{- range $p := .spec.ports -}}
{{- if or (eq (toString $p.name) "metrics") (has (toString $p.targetPort) (list "8081" "metrics" "health")) -}}
{{- $p.name -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The webhook Service: its metrics port as metrics.servicePort says (null: as the bundle has it). */}}
{{- define "modrule.service" -}}
{{- $m := .root.Values.metrics -}}
{{- $want := $m.servicePort -}}
{{- if and (kindIs "invalid" $want) $m.serviceMonitor.enabled -}}{{- $want = true -}}{{- end -}}
{{- $has := include "modrule.metricsPortName" .o -}}
{{- if and (eq (toString $want) "true") (not $has) -}}
{{- $port := dict "name" "metrics" "port" 8081 "targetPort" 8081 "protocol" "TCP" -}}
{{- $_ := set .o.spec "ports" (append .o.spec.ports $port) -}}
{{- else if eq (toString $want) "false" -}}
{{- if $m.serviceMonitor.enabled -}}
{{- fail "metrics.serviceMonitor.enabled needs the Service's metrics port: do not set metrics.servicePort=false" -}}
{{- end -}}
{{- $ports := list -}}
{{- range $p := .o.spec.ports -}}
{{- if ne (toString $p.name) $has -}}{{- $ports = append $ports $p -}}{{- end -}}
{{- end -}}
{{- $_ := set .o.spec "ports" $ports -}}
{{- end -}}
{{- end -}}

{{/* The PodDisruptionBudget's minAvailable or maxUnavailable. */}}
{{- define "modrule.pdb" -}}
{{- $v := .root.Values.podDisruptionBudget -}}
{{- if not (kindIs "invalid" $v.maxUnavailable) -}}
{{- $_ := unset .o.spec "minAvailable" -}}
{{- $_ := set .o.spec "maxUnavailable" $v.maxUnavailable -}}
{{- else if not (kindIs "invalid" $v.minAvailable) -}}
{{- $_ := set .o.spec "minAvailable" $v.minAvailable -}}
{{- end -}}
{{- end -}}

{{/* The webhook configurations: the dragnet's failurePolicy and timeout, more namespaces left out. */}}
{{- define "modrule.webhooks" -}}
{{- $v := .root.Values.webhook -}}
{{- range $hook := .o.webhooks -}}
{{- if eq $hook.name "dragnet.kubemod.io" -}}
{{- if $v.failurePolicy -}}{{- $_ := set $hook "failurePolicy" $v.failurePolicy -}}{{- end -}}
{{- if not (kindIs "invalid" $v.timeoutSeconds) -}}{{- $_ := set $hook "timeoutSeconds" $v.timeoutSeconds -}}{{- end -}}
{{- end -}}
{{- if $v.excludeNamespaces -}}
{{- range $e := dig "namespaceSelector" "matchExpressions" list $hook -}}
{{- if and (eq $e.key "kubernetes.io/metadata.name") (eq $e.operator "NotIn") -}}
{{- $_ := set $e "values" (concat $e.values $v.excludeNamespaces | uniq) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
certificates.mode=cert-manager: config/cert-manager's Issuer and Certificate are added ("objects"), its CA injection
annotations merged into the webhook configurations and its JSON patch (add to a list, "/-") applied to the
Deployment, as `kubectl kustomize config/cert-manager` does (a test compares the two).
*/}}
{{- define "modrule.certManager" -}}
{{- $root := .root -}}
{{- $objects := .objects -}}
{{- $src := "config/cert-manager" -}}
{{- range $patch := include "modrule.documents" (dict "root" $root "file" "files/cert-manager/ca_injection.yaml" "source" $src) | fromYamlArray -}}
{{- range $o := $objects -}}
{{- if and (eq $o.kind $patch.kind) (eq $o.metadata.name $patch.metadata.name) -}}
{{- $_ := mergeOverwrite $o.metadata $patch.metadata -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $patch := include "modrule.documents" (dict "root" $root "file" "files/cert-manager/ca_injection_validating.yaml" "source" $src) | fromYamlArray -}}
{{- range $o := $objects -}}
{{- if and (eq $o.kind $patch.kind) (eq $o.metadata.name $patch.metadata.name) -}}
{{- $_ := mergeOverwrite $o.metadata $patch.metadata -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $ops := fromYamlArray ($root.Files.Get "files/cert-manager/external_cert.yaml") -}}
{{- if not $ops -}}{{- fail "files/cert-manager/external_cert.yaml is missing or empty" -}}{{- end -}}
{{- range $o := $objects -}}
{{- if eq $o.kind "Deployment" -}}
{{- range $op := $ops -}}
{{- if or (ne $op.op "add") (not (hasSuffix "/-" $op.path)) -}}
{{- fail (printf "external_cert.yaml: the chart applies only add operations to the end of a list, not %s %s" $op.op $op.path) -}}
{{- end -}}
{{- $keys := splitList "/" (trimSuffix "/-" (trimPrefix "/" $op.path)) -}}
{{- $node := $o -}}
{{- range $k := initial $keys -}}
{{- if kindIs "slice" $node -}}{{- $node = index $node (atoi $k) -}}{{- else -}}{{- $node = get $node $k -}}{{- end -}}
{{- end -}}
{{- $_ := set $node (last $keys) (append (get $node (last $keys)) $op.value) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
