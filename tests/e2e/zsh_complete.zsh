# What a real interactive zsh offers for the words in $1 followed by TAB, with the
# completion files of $2 on its fpath. The candidates the completion system adds are written
# to $3, one a line, then a line `--done--`.
zmodload zsh/zpty || exit 3
line=$1 dir=$2 out=$3
: > $out
zpty z zsh -f -i
zpty -w z "PS1= PROMPT= RPROMPT= ; fpath=(${(q)dir} \$fpath); autoload -U compinit; compinit -u -D"
zpty -w z "zstyle ':completion:*' list-grouped false"
# Every candidate that reaches compadd is recorded (calls that only query are passed through).
zpty -w z 'compadd() { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return; fi; local -a __hits; builtin compadd -A __hits "$@"; (( $#__hits )) && print -rl -- $__hits >> '${(q)out}'; builtin compadd "$@"; }'
zpty -w z '_zt_done() { print -r -- --done-- >> '${(q)out}' }; comppostfuncs=(_zt_done)'
zpty -w z 'bindkey "^I" complete-word'
zpty -w -n z "$line"$'\t'
for i in {1..400}; do
  grep -qx -- --done-- $out 2>/dev/null && break
  zpty -r -t z junk 2>/dev/null
  sleep 0.025
done
zpty -d z
grep -qx -- --done-- $out || { print -u2 "no completion within 10 s"; exit 4 }
