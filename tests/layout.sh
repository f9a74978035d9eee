#!/bin/bash
# The layout's rule (docs/architecture.md, "Layout"): includes point down
# only, cli -> daemon -> backend -> net/image -> linux -> core. A file may
# include headers of its own folder and of the folders below it; one that
# includes a header from a folder above it is printed and the check fails,
# unless the pair is in tests/layout.allow (a known exception, with its
# reason, to be untied).
# Usage: tests/layout.sh [SRC_DIR] (default: src of the repository)
set -u
cd "$(dirname "$0")/.." || exit 2
src=${1:-src}
allow=tests/layout.allow

# the folder of a path, and its rank in the order above
layer() {
	case $1 in
	"$src"/core/*) echo core ;;
	"$src"/linux/*) echo linux ;;
	"$src"/net/*) echo net ;;
	"$src"/image/*) echo image ;;
	"$src"/backend/*) echo backend ;;
	"$src"/daemon/*) echo daemon ;;
	"$src"/cli/*) echo cli ;;
	"$src"/tools/*) echo tools ;;
	*) echo unknown ;;
	esac
}
rank() {
	case $1 in
	core) echo 0 ;; linux) echo 1 ;; net | image) echo 2 ;; backend) echo 3 ;;
	daemon) echo 4 ;; cli | tools) echo 5 ;; *) echo 9 ;;
	esac
}

# every header by its name (the include path has every folder: meson.build)
declare -A hdr
while IFS= read -r h; do
	n=${h##*/}
	if [ -n "${hdr[$n]:-}" ]; then
		echo "layout: two headers named $n: ${hdr[$n]} $h (an include by name is ambiguous)"
		exit 1
	fi
	hdr[$n]=$h
done < <(find "$src" -name '*.h' | sort)

declare -A allowed used
if [ -f "$allow" ]; then
	while read -r f h _; do
		case $f in '' | '#'*) continue ;; esac
		allowed["$f $h"]=1
	done <"$allow"
fi

bad=0 files=0
while IFS= read -r f; do
	files=$((files + 1))
	from=$(layer "$f")
	if [ "$from" = unknown ]; then
		echo "layout: $f is in no known folder (core linux net image backend daemon cli tools)"
		bad=$((bad + 1))
		continue
	fi
	while IFS=: read -r line text; do
		inc=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]*)".*/\1/' <<<"$text")
		if [[ $inc == */* ]]; then
			to=$(realpath -m --relative-to=. "$(dirname "$f")/$inc")
		elif [ -e "$(dirname "$f")/$inc" ]; then
			to=$(dirname "$f")/$inc
		else
			to=${hdr[$inc]:-}
		fi
		[ -n "$to" ] || continue # a generated or system header
		dest=$(layer "$to")
		[ "$(rank "$dest")" -gt "$(rank "$from")" ] || continue
		if [ -n "${allowed["$f ${to##*/}"]:-}" ]; then
			used["$f ${to##*/}"]=1
			continue
		fi
		echo "$f:$line: $text  ($from includes $dest, above it)"
		bad=$((bad + 1))
	done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f")
done < <(find "$src" -name '*.[ch]' | sort)

for k in "${!allowed[@]}"; do
	[ -n "${used[$k]:-}" ] || echo "layout: note: $allow: '$k' is no longer needed, remove it"
done
if [ "$bad" -gt 0 ]; then
	echo "layout: $bad include(s) point up (cli -> daemon -> backend -> net/image -> linux -> core)"
	exit 1
fi
echo "layout: $files files, every include points down"
