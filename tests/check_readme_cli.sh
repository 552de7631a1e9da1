#!/usr/bin/env bash
# README.md's CLI samples are the `loom` binary's real output: this runs each marked
# sample with the built binary and the in-tree plugins and fails, with a diff, when the
# README says something else (as check_ops_doc.cmake does for docs/ops.md).
#   tests/check_readme_cli.sh [--update] LOOM_BINARY [README] [PLUGIN_DIR]
# LOOM_BINARY is build/bin/loom; README defaults to the README.md next to tests/;
# PLUGIN_DIR (LOOM_PLUGIN_PATH for the runs) defaults to <build>/lib/loom/plugins.
# --update rewrites stale full samples in place from the binary's output (the
# `readme_cli` build target runs this); excerpts are never rewritten.
#
# Note [README CLI samples]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# An HTML comment right before a fenced block marks it (it does not show on the page):
#
#   <!-- cli-sample full: loom ARGS -->     the block is `$ build/bin/loom ARGS` and then
#                                           the whole output (stdout and stderr, as a
#                                           terminal shows them), checked line for line.
#   <!-- cli-sample excerpt: loom ARGS -->  the block is `$ build/bin/loom ARGS` and then
#                                           lines that must appear in the output, in
#                                           that order; a line `...` stands for lines
#                                           left out.
#   <!-- cli-file: NAME -->                 the block's text is written to the file NAME
#                                           in the directory the samples run in (e.g. a
#                                           manifest that a sample passes to --manifest).
#
# ARGS are split on blanks (no quoting). The exit status of a sample is not checked (a
# sample may show an error); its output is. What legitimately varies between machines
# is normalised: the build directory in printed paths becomes `<build>` (so the cpu
# plugin's file reads `<build>/lib/loom/plugins/libloom_plugin_cpu.so`), and the values
# of the `isa = ...` and `num_threads = ...` attribute lines of `loom plugins` are not
# compared (the README shows one machine's). LOOM_CPU_ISA and LOOM_NUM_THREADS are unset
# for the runs, so the samples show the defaults. A fenced block with a `$ ...loom` line
# that carries no marker is an error: every CLI sample in the README is checked.
set -euo pipefail

usage() {
  echo "usage: $0 [--update] LOOM_BINARY [README] [PLUGIN_DIR]" >&2
  exit 2
}
fail() {
  echo "check_readme_cli: $*" >&2
  exit 1
}

update=0
if [ "${1:-}" = --update ]; then
  update=1
  shift
fi
if [ $# -lt 1 ] || [ $# -gt 3 ]; then usage; fi
[ -x "$1" ] || fail "no executable '$1' (build the loom_cli and cpu targets first)"
bin_dir=$(cd "$(dirname "$1")" && pwd)
loom_bin=$bin_dir/$(basename "$1")
build_logical=$(cd "$bin_dir/.." && pwd)
build_physical=$(cd "$bin_dir/.." && pwd -P)
readme=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/README.md}
plugin_dir=${3:-$build_logical/lib/loom/plugins}
[ -f "$readme" ] || fail "no README '$readme'"
[ -d "$plugin_dir" ] || fail "no plugin directory '$plugin_dir'"
plugin_dir=$(cd "$plugin_dir" && pwd)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run_dir=$work/run
mkdir "$run_dir"
run_dir_physical=$(cd "$run_dir" && pwd -P)

mapfile -t lines < "$readme"
n=${#lines[@]}

# Blocks: kind (file, full, excerpt), argument, marker line, first content line, closing
# fence line (0-based indices into lines).
kinds=() args=() markers=() firsts=() closes=()
marker_re='^<!-- cli-(file|sample full|sample excerpt): (.+) -->$'
fence_re='^```'
for ((i = 0; i < n; i++)); do
  line=${lines[i]}
  if [[ $line =~ $marker_re ]]; then
    kind=${BASH_REMATCH[1]#sample }
    arg=${BASH_REMATCH[2]}
    [[ ${lines[i + 1]:-} =~ $fence_re ]] || fail "$readme:$((i + 1)): marker not followed by a fenced block"
    j=$((i + 2))
    while ((j < n)) && [ "${lines[j]}" != '```' ]; do j=$((j + 1)); done
    ((j < n)) || fail "$readme:$((i + 2)): fenced block not closed"
    kinds+=("$kind") args+=("$arg") markers+=("$i") firsts+=("$((i + 2))") closes+=("$j")
    i=$j
  elif [[ $line == '<!-- cli-'* ]]; then
    fail "$readme:$((i + 1)): malformed marker (want cli-sample full:, cli-sample excerpt: or cli-file:): $line"
  elif [[ $line =~ $fence_re ]]; then
    # An unmarked block: it must not show a loom command line.
    j=$((i + 1))
    while ((j < n)) && [ "${lines[j]}" != '```' ]; do
      if [[ ${lines[j]} =~ ^\$\ .*loom ]]; then
        fail "$readme:$((j + 1)): CLI sample without a marker (see Note [README CLI samples] in $0): ${lines[j]}"
      fi
      j=$((j + 1))
    done
    i=$j
  fi
done
((${#kinds[@]} > 0)) || fail "$readme: no marked CLI samples"

# Files first, wherever they are in the README.
for b in "${!kinds[@]}"; do
  [ "${kinds[b]}" = file ] || continue
  name=${args[b]}
  [[ $name =~ ^[A-Za-z0-9._-]+$ ]] || fail "$readme:$((markers[b] + 1)): bad file name '$name'"
  : > "$run_dir/$name"
  for ((k = firsts[b]; k < closes[b]; k++)); do printf '%s\n' "${lines[k]}" >> "$run_dir/$name"; done
done

# Runs `loom ARGS` in the sample directory; its normalised output goes to the file $2.
run_sample() {
  local words out line
  read -r -a words <<< "$1"
  [ "${words[0]:-}" = loom ] || fail "sample command must start with 'loom': $1"
  out=$work/raw
  (cd "$run_dir" && env -u LOOM_CPU_ISA -u LOOM_NUM_THREADS LOOM_PLUGIN_PATH="$plugin_dir" \
    "$loom_bin" "${words[@]:1}") > "$out" 2>&1 || true
  : > "$2"
  while IFS= read -r line || [ -n "$line" ]; do
    line=${line//"$run_dir_physical/"/}
    line=${line//"$run_dir/"/}
    line=${line//"$build_physical"/<build>}
    line=${line//"$build_logical"/<build>}
    printf '%s\n' "$line" >> "$2"
  done < "$out"
}

# The comparison masks the attribute values that depend on the machine.
mask() {
  sed -E 's/^(    (isa|num_threads) = ).*/\1(not compared)/' "$1"
}

status=0
changed=()
for b in "${!kinds[@]}"; do
  kind=${kinds[b]}
  [ "$kind" = file ] && continue
  cmd=${args[b]}
  where="$readme:$((markers[b] + 1)) ($kind sample \`$cmd\`)"
  readme_block=$work/readme.$b
  : > "$readme_block"
  for ((k = firsts[b]; k < closes[b]; k++)); do printf '%s\n' "${lines[k]}" >> "$readme_block"; done
  generated=$work/generated.$b
  printf '$ build/bin/%s\n' "$cmd" > "$generated"
  run_sample "$cmd" "$work/output.$b"
  cat "$work/output.$b" >> "$generated"

  if [ "$kind" = full ]; then
    if ! diff -q <(mask "$readme_block") <(mask "$generated") > /dev/null; then
      if [ "$update" = 1 ]; then
        changed+=("$b")
        echo "updating $where"
      else
        echo "$where differs from the binary's output (- README, + build/bin/loom):"
        diff -u --label README.md --label "build/bin/$cmd" <(mask "$readme_block") <(mask "$generated") || true
        status=1
      fi
    fi
  else
    head -n 1 "$generated" > "$work/want-head"
    if ! diff -q <(head -n 1 "$readme_block") "$work/want-head" > /dev/null; then
      echo "$where: the block must start with '$(cat "$work/want-head")'"
      status=1
      continue
    fi
    # Each README line (but `...`) must match an output line after the previous match.
    mapfile -t want < <(mask "$readme_block" | tail -n +2)
    mapfile -t have < <(mask "$work/output.$b")
    pos=0
    for w in "${want[@]}"; do
      [ "$w" = ... ] && continue
      while ((pos < ${#have[@]})) && [ "${have[pos]}" != "$w" ]; do pos=$((pos + 1)); done
      if ((pos == ${#have[@]})); then
        echo "$where: this README line is not in the output (or not in this order):"
        echo "  $w"
        echo "  (excerpts are edited by hand: run build/bin/$cmd)"
        status=1
        break
      fi
      pos=$((pos + 1))
    done
  fi
done

if ((${#changed[@]} > 0)); then
  new=$work/README.new
  : > "$new"
  i=0
  for b in "${changed[@]}"; do
    for ((; i < firsts[b]; i++)); do printf '%s\n' "${lines[i]}" >> "$new"; done
    cat "$work/generated.$b" >> "$new"
    i=${closes[b]}
  done
  for ((; i < n; i++)); do printf '%s\n' "${lines[i]}" >> "$new"; done
  cat "$new" > "$readme"
  echo "updated ${#changed[@]} sample(s) in $readme"
fi

if [ "$status" != 0 ]; then
  if [ "$update" = 1 ]; then
    echo "$readme: excerpts above need editing by hand"
  else
    echo "$readme's CLI samples are stale: run \`cmake --build build --target readme_cli\`" \
      "(or tests/check_readme_cli.sh --update build/bin/loom) and commit the README"
  fi
  exit 1
fi
[ "$update" = 1 ] || echo "$readme: its CLI samples match build/bin/loom"
