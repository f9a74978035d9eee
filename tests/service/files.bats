#!/usr/bin/env bats
# Files API: by what is opened, not how it is spelled (docs/security.md,
# "Files API: by what is opened"). /proc, /sys and /dev inside the sandbox
# are refused by the file system of the file that was opened, whatever the
# path's spelling or the symlinks the sandbox planted; every name a sandbox
# can make can be listed, downloaded and removed; a large listing is paged.

load helpers

# code of a files request: files_code METHOD PATH_QUERY [curl args]
files_code() {
    local m=$1 q=$2
    shift 2
    api_status "$m" "/v1/sandboxes/$ID/files?$q" "$@"
    echo "$status_code:$(jq -r '.error.code // "ok"' <<<"$body" 2>/dev/null)"
}

@test "files: /proc and /dev are refused by what is opened, whatever the spelling or planted symlink, for read, list, write, mkdir and remove" {
    WS=$T/ws
    mkdir -p "$WS"
    chmod 0777 "$WS"
    svc_start
    ID=$(sb_create "{\"workspace\": \"$WS\"}")
    sb_exec "$ID" '{"cmd": "ln -s /proc /tmp/p && ln -s ../proc /tmp/q && ln -s /proc/1 /workspace/x && ln -s /dev /tmp/d && mkdir -p /tmp/deep && ln -s ../../proc /tmp/deep/up && echo s >/dev/shm/f"}' | events_exit | grep -q '"exit_code":0'
    # the wall's other side: readable by the sandbox itself, and through
    # the files API on the old build
    assert_contains "$(sb_exec "$ID" '{"cmd": "head -1 /tmp/p/1/status"}' | events_stdout)" Name
    for p in /proc/1/status /./proc/1/status //proc/1/status /tmp/../proc/1/status \
        /tmp/p/1/status /tmp/q/1/status /workspace/x/status /tmp/deep/up/1/status \
        /tmp/p /tmp/p/ /tmp/q/1 /workspace/x /proc /dev /dev/null /tmp/d/null /dev/shm/f /tmp/d/shm/f /tmp/d/shm; do
        enc=$(jq -rn --arg p "$p" '$p | @uri')
        assert_eq "$(files_code GET "path=$enc")" 403:forbidden_path "GET $p"
    done
    # (a planted symlink itself is the sandbox's: removing it is allowed)
    for p in /proc/1/status /./proc/1/status /tmp/../proc/1/status /tmp/p/1/status \
        /tmp/q/1/status /workspace/x/status /tmp/deep/up/1 /tmp/q/1 /proc /dev /dev/null \
        /tmp/d/null /dev/shm/f /tmp/d/shm/f /tmp/d/shm; do
        enc=$(jq -rn --arg p "$p" '$p | @uri')
        assert_eq "$(files_code DELETE "path=$enc")" 403:forbidden_path "DELETE $p"
        assert_eq "$(files_code DELETE "path=$enc&recursive=true")" 403:forbidden_path "DELETE -r $p"
    done
    for p in /tmp/p/1/new /tmp/q/new /workspace/x/new /proc/new /tmp/d/new /tmp/d/shm/new /dev/shm/new; do
        enc=$(jq -rn --arg p "$p" '$p | @uri')
        assert_eq "$(files_code PUT "path=$enc" --data-binary x)" 403:forbidden_path "PUT $p"
        api_status POST "/v1/sandboxes/$ID/mkdir?path=$enc&parents=true"
        assert_eq "$status_code:$(jq -r .error.code <<<"$body")" 403:forbidden_path "mkdir $p"
    done
    # by base64 too
    assert_eq "$(files_code GET "path_b64=$(printf /tmp/p/1/status | base64 -w0)")" 403:forbidden_path
    # nothing was made or removed; the planted links are still there
    out=$(sb_exec "$ID" '{"cmd": "ls /dev/shm /tmp; test -L /tmp/p && echo links"}' | events_stdout)
    assert_contains "$out" links
    [[ "$out" != *new* ]] || fail "something was created: $out"
    # the usual files still work
    assert_eq "$(files_code PUT "path=/tmp/ok" --data-binary x)" 201:ok
    assert_eq "$(api GET "/v1/sandboxes/$ID/files?path=/tmp/ok")" x
    assert_eq "$(files_code DELETE "path=/tmp/p")" 200:ok "the planted symlink itself can be removed"
}

@test "files: names that are not UTF-8, or have newlines, tabs, '&', '+', '%': listed, downloaded and removed; path_b64 both ways" {
    svc_start
    ID=$(sb_create)
    sb_exec "$ID" '{"cmd": "mkdir /tmp/n && cd /tmp/n && for n in \"$(printf \"a\\377b\")\" \"$(printf \"new\\nline\")\" \"$(printf \"t\\tb\")\" \"$(printf \"\\303\\251t\\303\\251\")\" \"$(printf \"\\355\\240\\200\")\" a+b \"a b\" \"a&b\" \"a%b\" \"a=b\" -dash; do printf \"<%s>\" \"$n\" >\"$n\"; done"}' >/dev/null
    api_status GET "/v1/sandboxes/$ID/files?path=/tmp/n"
    assert_eq "$status_code" 200
    assert_eq "$(jq '.entries | length' <<<"$body")" 11 "every name is listed"
    # each by what the listing gave: name (UTF-8) or name_b64 (bytes)
    while read -r b64; do
        name=$(base64 -d <<<"$b64"; echo .)
        name=${name%.}
        got=$(api GET "/v1/sandboxes/$ID/files?path_b64=$(printf '/tmp/n/%s' "$name" | base64 -w0 | tr '+/' '-_')"; echo .)
        assert_eq "${got%.}" "<$name>" "download of $(printf %q "$name")"
        assert_eq "$(files_code DELETE "path_b64=$(printf '/tmp/n/%s' "$name" | base64 -w0)")" 200:ok
    done < <(jq -r '.entries[] | if .name_b64 then .name_b64 else (.name | @base64) end' <<<"$body")
    assert_eq "$(api GET "/v1/sandboxes/$ID/files?path=/tmp/n" | jq '.entries | length')" 0 "all removed"
    # not UTF-8: the listing says name null and name_b64
    sb_exec "$ID" "{\"cmd\": \"printf x >\\\"\$(printf '/tmp/n/\\\\377')\\\"\"}" >/dev/null
    assert_eq "$(api GET "/v1/sandboxes/$ID/files?path=/tmp/n" | jq -c '.entries[0] | [.name, .name_b64]')" '[null,"/w=="]'
    # an upload by path_b64 (and by a %-escaped path) makes that very name
    api_status PUT "/v1/sandboxes/$ID/files?path_b64=$(printf '/tmp/n/up\376' | base64 -w0)" --data-binary hi
    assert_eq "$status_code:$(jq -r .path_b64 <<<"$body")" "201:$(printf '/tmp/n/up\376' | base64 -w0)"
    assert_eq "$(files_code PUT "path=/tmp/n/pc%FD" --data-binary ho)" 201:ok
    out=$(sb_exec "$ID" '{"cmd": "cat /tmp/n/up\"$(printf \"\\376\")\" /tmp/n/pc\"$(printf \"\\375\")\""}' | events_stdout)
    assert_eq "$out" hiho
    # an empty file downloads too (its body is empty, not a closed connection)
    assert_eq "$(files_code PUT "path=/tmp/n/empty" --data-binary '')" 201:ok
    api_status GET "/v1/sandboxes/$ID/files?path=/tmp/n/empty"
    assert_eq "$status_code:${#body}" 200:0
    # mkdir by path_b64; bad base64 is a JSON error
    api_status POST "/v1/sandboxes/$ID/mkdir?path_b64=$(printf '/tmp/n/d\374' | base64 -w0)"
    assert_eq "$status_code" 201
    assert_eq "$(files_code GET 'path_b64=***')" 400:bad_path
    assert_eq "$(files_code GET "path_b64=$(printf '/tmp/\0x' | base64 -w0)")" 400:bad_path
}

@test "files: a directory too large for one answer is paged (limit, cursor), never an error" {
    svc_start
    ID=$(sb_create)
    # 25,000 names of 100 bytes: more than the old 10,000 cap, and more than
    # one answer's bytes
    sb_exec "$ID" '{"cmd": "mkdir /tmp/big && cd /tmp/big && seq -f %095g 25000 | xargs touch && ls | wc -l", "timeout": 120}' | events_stdout | grep -qx 25000
    seen=0 pages=0 cursor=
    : >"$T/names"
    while :; do
        api_status GET "/v1/sandboxes/$ID/files?path=/tmp/big&limit=10000${cursor:+&cursor=$cursor}"
        assert_eq "$status_code" 200 "page $pages: $(head -c 300 <<<"$body")"
        jq -r '.entries[].name' <<<"$body" >>"$T/names"
        n=$(jq '.entries | length' <<<"$body")
        [ "$n" -le 10000 ] || fail "a page of $n entries"
        pages=$((pages + 1))
        cursor=$(jq -r '.next_cursor // empty' <<<"$body")
        [ "$(jq .truncated <<<"$body")" = "$([ -n "$cursor" ] && echo true || echo false)" ] || fail "truncated and next_cursor disagree"
        [ -n "$cursor" ] || break
        [ "$pages" -lt 100 ] || fail "the pages never end"
    done
    assert_eq "$(sort -u "$T/names" | wc -l)" 25000 "every name once"
    assert_eq "$(wc -l <"$T/names")" 25000 "no name twice"
    [ "$pages" -ge 3 ] || fail "$pages pages"
    # small pages
    api_status GET "/v1/sandboxes/$ID/files?path=/tmp/big&limit=7"
    assert_eq "$(jq '.entries | length' <<<"$body")" 7
    # a bad cursor or limit is a JSON error
    assert_eq "$(files_code GET 'path=/tmp/big&cursor=bogus')" 400:bad_request
    assert_eq "$(files_code GET 'path=/tmp/big&limit=0')" 400:bad_request
    assert_eq "$(files_code GET 'path=/tmp/big&limit=100001')" 400:bad_request
}
