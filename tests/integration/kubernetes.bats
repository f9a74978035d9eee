#!/usr/bin/env bats
# deploy/kubernetes (docs/kubernetes.md), offline: the manifests against the
# Kubernetes OpenAPI schemas (kubernetes-models from npm, tests/kubernetes),
# broken ones refused; the installer against the config Debian's containerd
# makes, read back by containerd itself; the self-contained tree bundle.sh
# makes runs with its own libraries. No cluster is involved (see the docs).

load helpers

K=$_aj_root/deploy/kubernetes
V=$_aj_root/tests/kubernetes

setup() {
    aj_setup
    [ -d "$V/node_modules/kubernetes-models" ] || skip "tests/kubernetes: npm ci not run (scripts/setup.sh)"
}

@test "kubernetes: the manifests pass the schema check; broken ones fail it" {
    run node "$V/validate.mjs" "$K"/*.yaml
    assert_status 0
    for k in RuntimeClass/agentjail DaemonSet/agentjail-installer DaemonSet/agentjail Service/agentjail \
        ConfigMap/agentjail-proxy Deployment/agentjail-proxy Pod/agentjail-example Sandbox/agent-workspace; do
        [[ "$output" == *"ok "*" $k"* ]] || fail "$k not checked: $output"
    done
    # each breakage is caught, naming the field
    mkdir -p "$T/bad"
    sed 's/^handler: agentjail/handler: [agentjail]/' "$K/runtimeclass.yaml" >"$T/bad/1.yaml"
    sed 's/^  replicas: 2/  replicas: two/' "$K/service.yaml" >"$T/bad/2.yaml"
    sed 's/- name: install$/- nam: install/' "$K/installer.yaml" >"$T/bad/3.yaml"
    sed 's/runtimeClassName: agentjail/runtimeClassName: 7/' "$K/agent-sandbox.yaml" >"$T/bad/4.yaml"
    sed 's/^kind: RuntimeClass/kind: RuntimeKlass/' "$K/runtimeclass.yaml" >"$T/bad/5.yaml"
    local f want
    for f in 1:data/handler 2:data/spec/replicas 3:"required property name" 4:data/runtimeClassName \
        5:"no schema"; do
        want=${f#*:}
        f=$T/bad/${f%%:*}.yaml
        ! cmp -s "$f" "$K/$(basename "$f")" || fail "sed changed nothing"
        run node "$V/validate.mjs" "$f"
        assert_status 1
        [[ "$output" == *"FAIL"*"$want"* ]] || fail "$f: expected a failure on $want: $output"
    done
    # the proxy's ConfigMap carries the shipped nginx config verbatim
    node -e '
        const { parseAllDocuments } = require(process.argv[1] + "/node_modules/yaml");
        const fs = require("fs");
        const cm = parseAllDocuments(fs.readFileSync(process.argv[2], "utf8")).map((d) => d.toJS())
            .find((o) => o.kind === "ConfigMap");
        process.exit(cm.data["agentjail.conf"] === fs.readFileSync(process.argv[3], "utf8") ? 0 : 1);
    ' "$V" "$K/service.yaml" "$_aj_root/deploy/nginx/agentjail.conf" ||
        fail "service.yaml's ConfigMap differs from deploy/nginx/agentjail.conf"
}

@test "kubernetes: the installer configures containerd's runtime agentjail, idempotently, and undoes it" {
    command -v containerd >/dev/null || skip "containerd not installed"
    local h=$T/host src=$T/src
    mkdir -p "$h/etc/containerd" "$src/bin"
    cp "$AJ_REAL" "$(dirname "$AJ_REAL")"/agentjail-net "$src/bin/"
    containerd config default >"$h/etc/containerd/config.toml"
    local inst=("$K/image/agentjail-install")
    export HOST_ROOT=$h SRC=$src AJ_NO_RESTART=1
    sh "${inst[@]}" install
    sh "${inst[@]}" install # again: one runtime, the same config
    assert_eq "$(grep -c 'runtimes.agentjail\]' "$h/etc/containerd/config.toml")" 1 "runtime sections"
    # containerd itself reads it: the runtime, its shim, its runc
    run containerd --config "$h/etc/containerd/config.toml" config dump
    assert_status 0
    local dump=$output
    [[ "$dump" == *'runtimes.agentjail]'*'runtime_type = "io.containerd.runc.v2"'* ]] || fail "$dump"
    [[ "$dump" == *'runtimes.agentjail.options]'*'BinaryName = "/opt/agentjail/bin/agentjail-oci"'* ]] ||
        fail "no BinaryName in: $dump"
    [[ "$dump" == *'pod_annotations = ["run.agentjail.*"]'* ]] || fail "$dump"
    [[ "$dump" == *'runtimes.runc]'* ]] || fail "runc's runtime is gone: $dump"
    # the wrapper containerd's shim runs is agentjail oci
    run "$h/opt/agentjail/bin/agentjail-oci" features
    assert_status 0
    jq -e '.ociVersionMax' <<<"$output" >/dev/null
    # a runtime "agentjail" that is not the installer's is left alone: refused
    cp "$h/etc/containerd/config.toml" "$T/ours.toml"
    sed -i '/^# agentjail-install: /d' "$h/etc/containerd/config.toml"
    run sh "${inst[@]}" install
    assert_status 1
    [[ "$output" == *"someone else's"* ]] || fail "$output"
    cp "$T/ours.toml" "$h/etc/containerd/config.toml"
    sh "${inst[@]}" uninstall
    ! grep -q agentjail "$h/etc/containerd/config.toml" || fail "left in containerd's config"
    [ ! -e "$h/opt/agentjail/bin" ] || fail "the runtime is still on the node"
    containerd config default | cmp -s - "$h/etc/containerd/config.toml" || fail "the config is not as it was"
}

@test "kubernetes: bundle.sh makes a tree whose programs load only its own libraries" {
    command -v patchelf >/dev/null || skip "patchelf not installed"
    local b=$T/opt/agentjail d
    d=$(dirname "$AJ_REAL")
    sh "$K/image/bundle.sh" "$b" "$b" "$d" "$d"
    [ -x "$b/bin/agentjail" ] && [ -x "$b/bin/agentjail-net" ] || fail "$(ls "$b/bin")"
    local f n=0
    for f in "$b"/bin/*; do
        patchelf --print-interpreter "$f" >/dev/null 2>&1 || continue
        n=$((n + 1))
        assert_eq "$(patchelf --print-interpreter "$f")" "$b/lib/ld-linux-x86-64.so.2" "$f's interpreter"
        # every library it loads is the tree's
        ldd "$f" | awk '/=>/ && $1 !~ /ld-linux/ && $3 ~ /^\// { print $3 }' | grep -v "^$b/lib/" && fail "$f loads a host library"
    done
    [ "$n" -gt 0 ] || fail "no dynamic program was bundled"
    # it runs: a sandbox from the tree
    run timeout 30 "$b/bin/agentjail" run "${AJ_QUIET[@]}" -- /bin/echo bundled
    assert_status 0
    assert_eq "$output" bundled
}
