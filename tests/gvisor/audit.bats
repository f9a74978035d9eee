#!/usr/bin/env bats
# Level 2's files in the audit log: a download through the files API is an
# event like at level 1 (docs/api.md, "Audit"), with the sandbox, the path
# and the size; a listing is not a download.

load ../service/helpers

@test "serve gvisor: a download is in the audit log as at level 1, a listing is not" {
    svc_start
    local id
    id=$(api POST /v1/sandboxes -d '{"isolation": "gvisor"}' | jq -er .id)
    sb_exec "$id" '{"cmd": ["sh", "-c", "printf hello > /tmp/f"]}' >/dev/null
    assert_eq "$(api GET "/v1/sandboxes/$id/files?path=/tmp/f")" hello "the download"
    api GET "/v1/sandboxes/$id/files?path=/tmp" >/dev/null # a listing: not a download
    assert_eq "$(jq -c 'select(.event == "download") | [.sandbox, .path, .size]' "$STATE/audit.log")" \
        "[\"$id\",\"/tmp/f\",5]" "the download's event"
    api_status DELETE "/v1/sandboxes/$id"
    assert_eq "$status_code" 200
    left=$(pgrep -a -f 'runsc.*--root=' || true)
    [ -z "$left" ] || fail "runsc processes left: $left"
}
