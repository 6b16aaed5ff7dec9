# bash completion for tea-evaluate (bash-completion loads it by the command's name).
#
# The subcommands and their options are read from the binary's own --help, so they never fall
# behind it; plugin names come from `tea-evaluate --json plugins`, which probes each plugin once
# (a tenth of a second) and so is asked only after --backend, --observer or --login.

# The first word of each option line of `tea-evaluate ARGS... --help`, split at commas.
_tea_evaluate_options() {
    "$@" --help 2>/dev/null | awk '$1 ~ /^-/ { n = split($1, names, ","); for (i = 1; i <= n; i++) print names[i] }'
}

# The subcommands `tea-evaluate --help` lists.
_tea_evaluate_subcommands() {
    "$1" --help 2>/dev/null | awk '/^Subcommands:/ { listed = 1; next } listed && NF { print $1 }'
}

# The names of the installed plugins of kind $2, as `$1 --json plugins` lists them (its keys are
# sorted: "kind" comes before "name" in each plugin's object).
_tea_evaluate_plugins() {
    "$1" --json plugins 2>/dev/null | awk -v want="\"$2\"," '
        $1 == "\"kind\":" { kind = $2 }
        $1 == "\"name\":" && kind == want { name = $2; gsub(/[",]/, "", name); print name }'
}

_tea_evaluate() {
    # -s: "--config=FILE" is completed as "--config FILE" is (_init_completion sets split).
    # shellcheck disable=SC2034
    local cur prev words cword split
    _init_completion -s || return
    local program=${words[0]}

    # The subcommand: the first word that is neither an option nor a common option's value.
    local i subcommand="" at=0
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
        --) break ;;
        --config | --backend | --observer) ((i++)) ;;
        -*) ;;
        *)
            subcommand=${words[i]}
            at=$i
            break
            ;;
        esac
    done

    # After "--", exec's and preflight's words are a command line of their own.
    if [[ $subcommand == exec || $subcommand == preflight ]]; then
        for ((i = at + 1; i < cword; i++)); do
            if [[ ${words[i]} == -- ]]; then
                _command_offset $((i + 1))
                return
            fi
        done
    fi

    case $prev in
    --config)
        _filedir
        return
        ;;
    --backend)
        mapfile -t COMPREPLY < <(compgen -W "auto $(_tea_evaluate_plugins "$program" backend)" -- "$cur")
        return
        ;;
    --observer)
        mapfile -t COMPREPLY < <(compgen -W "auto none $(_tea_evaluate_plugins "$program" observer)" -- "$cur")
        return
        ;;
    --login)
        mapfile -t COMPREPLY < <(compgen -W "$(_tea_evaluate_plugins "$program" login)" -- "$cur")
        return
        ;;
    --workspace | --system-path)
        _filedir -d
        return
        ;;
    --withhold | -o | --output)
        _filedir
        return
        ;;
    --timeout | --env | --egress | --legs | --jobs)
        # A number or a value of the user's own.
        return
        ;;
    esac

    if [[ -z $subcommand ]]; then
        if [[ $cur == -* ]]; then
            mapfile -t COMPREPLY < <(compgen -W "$(_tea_evaluate_options "$program")" -- "$cur")
        else
            mapfile -t COMPREPLY < <(compgen -W "$(_tea_evaluate_subcommands "$program")" -- "$cur")
        fi
        return
    fi

    if [[ $cur == -* ]]; then
        # The common options are taken after the subcommand too.
        local options
        options=$({
            _tea_evaluate_options "$program"
            _tea_evaluate_options "$program" "$subcommand"
        } | awk '!seen[$0]++')
        [[ $subcommand == exec || $subcommand == preflight ]] && options+=" --"
        mapfile -t COMPREPLY < <(compgen -W "$options" -- "$cur")
        return
    fi

    case $subcommand in
    help)
        # One topic: the word right after help.
        ((cword == at + 1)) &&
            mapfile -t COMPREPLY < <(compgen -X help -W "$(_tea_evaluate_subcommands "$program")" -- "$cur")
        ;;
    check | run | qualify | score | report | preflight)
        # EVAL_DIR or RUN_DIR: a folder.
        _filedir -d
        ;;
    esac
}
complete -F _tea_evaluate tea-evaluate
