#!/bin/sh
# The C core's dependencies point one way:
#   apps -> run -> scheme, op, pingpong -> clock -> timer -> base
# Each folder of src/core may include only the folders below it; and no file
# knows a scheme or sync algorithm by identity (== &mt_scheme_x) but its own.
root=${1:-$(dirname "$0")/../..}
core="$root/src/core"
fail=0
allowed() {
    case $1 in
    base) echo "base" ;;
    timer) echo "base timer" ;;
    clock) echo "base timer clock" ;;
    op) echo "base timer op" ;;
    pingpong) echo "base timer pingpong" ;;
    tree) echo "base timer tree" ;;
    logp) echo "base timer logp" ;;
    scheme) echo "base timer clock op scheme" ;;
    run) echo "base timer clock op pingpong tree logp scheme run" ;;
    esac
}
for dir in "$core"/*/; do
    layer=$(basename "$dir")
    ok=$(allowed "$layer")
    [ -n "$ok" ] || { echo "unknown folder src/core/$layer: add it to tests/c/check_layers.sh"; fail=1; continue; }
    for f in "$dir"*.c "$dir"*.h; do
        [ -e "$f" ] || continue
        for inc in $(sed -n 's/^#include "\([a-z_]*\)\/.*/\1/p' "$f" | sort -u); do
            case " $ok " in *" $inc "*) ;; *) echo "src/core/$layer/$(basename "$f") includes $inc/: against the layering"; fail=1 ;; esac
        done
    done
done
# identity checks of schemes and sync algorithms outside their own file
for kind in scheme sync; do
    for f in $(grep -rl "[=!]= *&mt_${kind}_" "$root/src" 2>/dev/null); do
        for s in $(sed -n "s/.*[=!]= *&mt_${kind}_\([a-z0-9_]*\).*/\1/p" "$f" | sort -u); do
            [ "$(basename "$f")" = "${kind}_$s.c" ] || { echo "$f checks for $kind '$s' by identity"; fail=1; }
        done
    done
done
[ $fail = 0 ] && echo ok
exit $fail
