#!/bin/bash
# The layout's rules (docs/architecture.md, "Layout"):
# 1. Includes point down only, cli -> daemon -> backend -> net/image ->
#    linux -> core. A file may include headers of its own folder and of the
#    folders below it; one that includes a header from a folder above it is
#    printed and the check fails, unless the pair is in tests/layout.allow
#    ("FILE HEADER reason": a known exception, to be untied).
# 2. No circles between files ("Circles between files"). A file is X.c with
#    X.h (the same stem). File X depends on file Y when X.c or X.h includes
#    Y.h, or uses a function or variable that Y.c defines (which catches a
#    declaration kept in another file's header: mount.h once declared
#    etc_cache.c's functions). Every circle (a strongly connected set of
#    files) is printed with its edges and the check fails, unless a line
#    "circle FILE reason" in tests/layout.allow names one of its files.
# Usage: tests/layout.sh [SRC_DIR] (default: src of the repository)
set -u
cd "$(dirname "$0")/.." || exit 2
src=${1:-src}
allow=tests/layout.allow

# the folder of a path ($layer), and its rank in the order above ($rank)
layer_of() {
	case $1 in
	"$src"/core/*) layer=core rank=0 ;;
	"$src"/linux/*) layer=linux rank=1 ;;
	"$src"/net/*) layer=net rank=2 ;;
	"$src"/image/*) layer=image rank=2 ;;
	"$src"/backend/*) layer=backend rank=3 ;;
	"$src"/daemon/*) layer=daemon rank=4 ;;
	"$src"/cli/*) layer=cli rank=5 ;;
	"$src"/tools/*) layer=tools rank=5 ;;
	*) layer=unknown rank=9 ;;
	esac
}

mapfile -t cfiles < <(find "$src" -name '*.c' | sort)
mapfile -t hfiles < <(find "$src" -name '*.h' | sort)

# every header by its name (the include path has every folder: meson.build)
declare -A hdr
for h in "${hfiles[@]}"; do
	n=${h##*/}
	if [ -n "${hdr[$n]:-}" ]; then
		echo "layout: two headers named $n: ${hdr[$n]} $h (an include by name is ambiguous)"
		exit 1
	fi
	hdr[$n]=$h
done

declare -A allowed used circle_ok
if [ -f "$allow" ]; then
	while read -r f h _; do
		case $f in '' | '#'*) continue ;; esac
		if [ "$f" = circle ]; then
			circle_ok[$h]=1
		else
			allowed["$f $h"]=1
		fi
	done <"$allow"
fi

# 1. includes point down; every include is also an edge for 2.
bad=0 files=0 edges=
declare -A seen_file
re='^([^:]*):([0-9]*):[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]*)"'
while IFS= read -r rec; do
	[[ $rec =~ $re ]] || continue
	f=${BASH_REMATCH[1]} line=${BASH_REMATCH[2]} inc=${BASH_REMATCH[3]}
	text=${rec#*:*:}
	dir=${f%/*}
	if [[ $inc == */* && $src == /* ]]; then
		to=$(realpath -m "$dir/$inc")
	elif [[ $inc == */* ]]; then
		to=$(realpath -m --relative-to=. "$dir/$inc")
	elif [ -e "$dir/$inc" ]; then
		to=$dir/$inc
	else
		to=${hdr[$inc]:-}
	fi
	[ -n "$to" ] || continue # a generated or system header
	edges+="I ${f%.[ch]} ${to%.h}"$'\n'
	layer_of "$f"
	from=$layer from_rank=$rank
	[ "$from" = unknown ] && continue
	layer_of "$to"
	[ "$rank" -gt "$from_rank" ] || continue
	if [ -n "${allowed["$f ${to##*/}"]:-}" ]; then
		used["$f ${to##*/}"]=1
		continue
	fi
	echo "$f:$line: $text  ($from includes $layer, above it)"
	bad=$((bad + 1))
done < <(grep -HnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "${cfiles[@]}" "${hfiles[@]}")

for f in "${cfiles[@]}" "${hfiles[@]}"; do
	files=$((files + 1))
	layer_of "$f"
	if [ "$layer" = unknown ]; then
		echo "layout: $f is in no known folder (core linux net image backend daemon cli tools)"
		bad=$((bad + 1))
	fi
done

for k in "${!allowed[@]}"; do
	[ -n "${used[$k]:-}" ] || echo "layout: note: $allow: '$k' is no longer needed, remove it"
done
if [ "$bad" -gt 0 ]; then
	echo "layout: $bad include(s) point up (cli -> daemon -> backend -> net/image -> linux -> core)"
fi

# 2. circles. The definitions of functions and variables at file scope (a
# line at column 0 naming NAME( or NAME[ or NAME =, not static), kept only
# for names some header declares; then where each such name is used.
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
# (Not in src/tools: a generator's stand-ins for what it generates.)
lib=()
for f in "${cfiles[@]}"; do
	[[ $f == "$src"/tools/* ]] || lib+=("$f")
done
grep -HoE '^[A-Za-z_][A-Za-z0-9_ *]*[ *]\**[A-Za-z_][A-Za-z0-9_]*(\(|\[| =)' "${lib[@]}" |
	grep -vE ':(static|typedef|extern|struct|enum|union|return|else|if|while|for|switch|case|goto|do)[ (]' |
	sed -E 's/^(.*)\.c:.*[ *]([A-Za-z_][A-Za-z0-9_]*)(\(|\[| =)$/D \1 \2/' >"$tmp/defs"
# declared: NAME( or NAME[ or "NAME;" on a header line that is no comment
grep -hvE '^[[:space:]]*(/?\*|//)' "${hfiles[@]}" |
	grep -oE '[A-Za-z_][A-Za-z0-9_]*[[:space:]]*(\(|\[|;)' |
	sed -E 's/[[:space:]]*[[;(]$//' | sort -u >"$tmp/declared"
awk 'NR == FNR { d[$1] = 1; next } ($3 in d) { print $3 }' "$tmp/declared" "$tmp/defs" | sort -u >"$tmp/names"
if [ -s "$tmp/names" ]; then
	grep -HowF -f "$tmp/names" "${cfiles[@]}" | sort -u |
		sed -E 's/^(.*)\.c:(.*)$/U \1 \2/' >"$tmp/uses"
else
	: >"$tmp/uses"
fi

printf '%s' "$edges" >"$tmp/incs"
printf 'H %s\n' "${hfiles[@]%.h}" >"$tmp/heads"
mapfile -t circles < <(awk '
	$1 == "H" { own[$2] = 1; next }
	$1 == "D" { if (($3 in def) && def[$3] != $2) amb[$3] = 1; def[$3] = $2; next }
	$1 == "I" || $1 == "U" {
		from = $2
		if ($1 == "I") { to = $3; why = "includes " to ".h" }
		else {
			if (!($3 in def) || ($3 in amb)) next
			to = def[$3]; why = "uses " $3
			if (to in own) next # that use is the include of to.h
		}
		if (from == to) next
		node[from] = 1; node[to] = 1
		if (!((from, to) in edge)) {
			edge[from, to] = why
			adj[from, ++nadj[from]] = to
		}
	}
	function visit(v,   i, w, m, s) {
		idx[v] = low[v] = ++counter
		stack[++sp] = v; onstack[v] = 1
		for (i = 1; i <= nadj[v]; i++) {
			w = adj[v, i]
			if (!(w in idx)) { visit(w); if (low[w] < low[v]) low[v] = low[w] }
			else if (onstack[w] && idx[w] < low[v]) low[v] = idx[w]
		}
		if (low[v] == idx[v]) {
			m = 0; s = ""
			do { w = stack[sp--]; onstack[w] = 0; comp[w] = v; m++; s = s " " w } while (w != v)
			if (m > 1) { ncirc++; members[ncirc] = s; root[ncirc] = v }
		}
	}
	END {
		for (v in node) if (!(v in idx)) visit(v)
		for (c = 1; c <= ncirc; c++) {
			line = "C" members[c] " |"
			for (k in edge) {
				split(k, p, SUBSEP)
				if (comp[p[1]] == root[c] && comp[p[2]] == root[c])
					line = line " " p[1] " -> " p[2] " (" edge[k] ");"
			}
			print line
		}
	}' "$tmp/heads" "$tmp/defs" "$tmp/incs" "$tmp/uses")

ncircles=0
for c in "${circles[@]}"; do
	set -- ${c%%|*}
	shift
	names=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
	ok=
	for m in "$@"; do
		[ -n "${circle_ok[$m]:-}" ] && ok=$m && used["circle $m"]=1
	done
	[ -n "$ok" ] && continue
	ncircles=$((ncircles + 1))
	echo "layout: a circle between files: $names"
	tr ';' '\n' <<<"${c#*| }" | sed -E '/^ *$/d; s/^ */    /' | sort
done
for m in "${!circle_ok[@]}"; do
	[ -n "${used["circle $m"]:-}" ] ||
		echo "layout: note: $allow: 'circle $m' is in no circle any more, remove it"
done
if [ "$ncircles" -gt 0 ]; then
	echo "layout: $ncircles circle(s) between files: move a declaration to the file that defines it, or a shared part down into a file of its own"
fi
[ "$bad" -eq 0 ] && [ "$ncircles" -eq 0 ] || exit 1
echo "layout: $files files, every include points down, no circle between files"
