#!/usr/bin/env bash
# The REPL: expressions first, statements over several lines, readable tables, errors that do
# not end the session; piped (no readline) and, when tmux is present, on a real terminal.
source "$(dirname "$0")/lib.sh" || exit 1

out=$(printf '%s\n' '1+1' 'x = {1, 2, {a = 3}, name = "n"}' 'x' 'for i = 1, 2 do' 'print(i)' 'end' \
  'error("oops")' '"still here"' '=10*2' 'local t = {} for i = 1, 100 do t[i] = i end return t' \
  | "$PS_BIN" -i 2>"$TMP/repl.err")
rc=$?
expect_eq "piped REPL exits 0 at end of input" "$rc" "0"
expect_contains "expression printed" "$out" $'\n2\n'
expect_contains "table printed readably" "$out" '{ 1, 2, { a = 3 }, name = "n" }'
expect_contains "multi-line statement runs" "$out" $'1\n2\n'
expect_contains "error reported" "$(cat "$TMP/repl.err")" "perfscript: stdin:1: oops"
expect_contains "session goes on after an error" "$out" '"still here"'
expect_contains "=expr shortcut" "$out" $'\n20\n'
expect_contains "long tables truncated" "$out" "... (70 more)"

out=$(printf 'help()\n' | "$PS_BIN" -i)
expect_contains "help() lists the comforts" "$out" "save(rows, path)"

out=$(printf 'save({{"a","b"},{1,2}}, "%s/s.csv")\n' "$TMP" | "$PS_BIN" -i)
expect_contains "save() reports what it wrote" "$out" "created $TMP/s.csv (2 rows)"
expect_eq "save() wrote the CSV" "$(cat "$TMP/s.csv")" $'a,b\n1,2'

if ! command -v tmux >/dev/null; then
  echo "SKIP: tmux not installed; terminal REPL test skipped"
  finish
  exit $?
fi
sock="$TMP/tmux.sock"
export HOME="$TMP/home"
mkdir -p "$HOME"
tmux -S "$sock" new-session -d -x 120 -y 30 "$PS_BIN 2>$TMP/tty.err"
screen() { tmux -S "$sock" capture-pane -p; }
wait_for() {  # wait_for TEXT: up to 5 s
  for _ in $(seq 50); do screen | grep -qF -- "$1" && return 0; sleep 0.1; done
  return 1
}
wait_for "perfscript 0.1.0" && ok "terminal REPL shows the banner" || not_ok "terminal REPL shows the banner" "$(screen)"
tmux -S "$sock" send-keys 'my_long_global = 7' Enter
tmux -S "$sock" send-keys 'my_long_gl' Tab
sleep 0.3
tmux -S "$sock" send-keys ' * 6' Enter
wait_for "42" && ok "tab completes a global" || not_ok "tab completes a global" "$(screen)"
tmux -S "$sock" send-keys 'string.up' Tab
sleep 0.3
tmux -S "$sock" send-keys '("abc")' Enter
wait_for '"ABC"' && ok "tab completes a table field" || not_ok "tab completes a table field" "$(screen)" "$(cat $TMP/tty.err)"
tmux -S "$sock" send-keys 'names_obj = {names = function() return {"MatMulV2", "QuantBatchMatmulV3"} end}' Enter
tmux -S "$sock" send-keys 'print(#names_obj:names("Quant' Tab
sleep 0.3
tmux -S "$sock" send-keys '))' Enter
wait_for "print(#names_obj:names(\"QuantBatchMatmulV3\"))" && ok "tab completes names inside a string" || not_ok "tab completes names inside a string" "$(screen)"
tmux -S "$sock" send-keys 'for i = 1, 2 do' Enter
wait_for ">>" && ok "continuation prompt for an open statement" || not_ok "continuation prompt" "$(screen)"
tmux -S "$sock" send-keys 'end' Enter
tmux -S "$sock" send-keys C-d
for _ in $(seq 30); do tmux -S "$sock" has-session 2>/dev/null || break; sleep 0.1; done
tmux -S "$sock" kill-server 2>/dev/null
hist=$(cat "$HOME/.perfscript_history" 2>/dev/null)
expect_contains "history saved in the home directory" "$hist" "my_long_global = 7"
finish
