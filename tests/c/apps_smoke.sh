#!/bin/sh
# The three executables as a user meets them: --help, --list, --check-args
# (no MPI) and one short run each with --outdir on 2 ranks.
# usage: apps_smoke.sh BINDIR MPIEXEC
bin=$1
mpiexec=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
die() { echo "FAIL: $*"; fail=1; }
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $2" "$1"; }

for app in bench clocks pingpong tree; do
    b="$bin/mpitempo-$app"
    "$b" --help > "$tmp/help" || die "$app --help"
    "$b" --list > "$tmp/list.json" || die "$app --list"
    # the usage text names every parameter of --list's table
    for name in $(json "$tmp/list.json" "print(' '.join(p['name'] for p in d['params']))"); do
        flag=$(echo "$name" | tr _ -)
        grep -q -- "--$flag" "$tmp/help" || die "$app --help lacks --$flag"
    done
    json "$tmp/list.json" "assert all(set(p) == {'name','type','default','unit','min','max','help'} for p in d['params'])" ||
        die "$app --list: params shape"
    "$b" --check-args > "$tmp/check.json" || die "$app --check-args"
    json "$tmp/check.json" "assert d['kind'] == '$app' and 'options' in d and 'run' in d" || die "$app --check-args JSON"
    "$b" --check-args --timer nosuch > "$tmp/out" 2> "$tmp/err" && die "$app --check-args accepted a bad timer"
    [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q "^mpitempo-$app: error: unknown timer 'nosuch'" "$tmp/err" ||
        die "$app: the bad timer's message: $(cat "$tmp/err")"
    [ -s "$tmp/out" ] && die "$app --check-args printed JSON for bad options"
done

# clocks --outdir: clocks.json (the stdout array) and meta.json, kind clocks; never overwritten
mkdir "$tmp/c"
"$mpiexec" -n 2 "$bin/mpitempo-clocks" --algorithms jk:fitpts=5,pp=5 --wait 0 --check-pp 5 --outdir "$tmp/c" \
    --run-index 3 > "$tmp/out" 2>&1 || die "clocks --outdir: $(cat "$tmp/out")"
json "$tmp/c/clocks.json" "assert d[0]['mpirun'] == 3 and d[0]['nprocs'] == 2" || die "clocks.json"
json "$tmp/c/meta.json" "assert d['kind'] == 'clocks' and d['format_version'] == 1 and d['run_index'] == 3 and d['specs']" ||
    die "clocks meta.json"
[ -z "$(ls -A "$tmp/c" | grep -v '^clocks.json$' | grep -v '^meta.json$')" ] || die "clocks left other files"
"$mpiexec" -n 2 "$bin/mpitempo-clocks" --algorithms jk --outdir "$tmp/c" > "$tmp/out" 2>&1 &&
    die "clocks overwrote results"
grep -q "already holds results" "$tmp/out" || die "clocks: the overwrite message: $(cat "$tmp/out")"

# bench and pingpong write kind into meta.json
mkdir "$tmp/b" "$tmp/p"
"$mpiexec" -n 2 "$bin/mpitempo-bench" --ops allreduce --msizes 8 --nrep 5 --timer-reads 1000 --outdir "$tmp/b" \
    --quiet > "$tmp/out" 2>&1 || die "bench: $(cat "$tmp/out")"
json "$tmp/b/meta.json" "assert d['kind'] == 'bench' and d['scheme']['name'] == 'barrier'" || die "bench meta.json"
"$mpiexec" -n 2 "$bin/mpitempo-pingpong" --msizes 8 --ntrial 5 --npptrial 5 --timer-reads 1000 --outdir "$tmp/p" \
    --quiet > "$tmp/out" 2>&1 || die "pingpong: $(cat "$tmp/out")"
json "$tmp/p/meta.json" "assert d['kind'] == 'pingpong' and d['pingpong']['dest'] == 1" || die "pingpong meta.json"
# bench without --outdir prints its table sorted by op (as given) and size, whatever the shuffled order
"$mpiexec" -n 2 "$bin/mpitempo-bench" --ops bcast,allreduce --msizes 64,8,1K --nrep 5 --timer-reads 1000 --seed 7 \
    --quiet > "$tmp/out" 2> "$tmp/err" || die "bench table: $(cat "$tmp/err")"
rows=$(grep -v '^#' "$tmp/out" | grep -v '^op ' | awk '{print $1 "/" $2}' | tr '\n' ' ')
[ "$rows" = "bcast/8 bcast/64 bcast/1024 allreduce/8 allreduce/64 allreduce/1024 " ] || die "bench table order: $rows"
[ $fail = 0 ] && echo ok
exit $fail
